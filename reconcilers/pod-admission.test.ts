/**
 * The reconciler's admission seam (the NodeAgent's `spec.paused`), against the recording fake
 * runtime: while paused, a pod without a sandbox stays Pending; everything else proceeds.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import { FakeRuntime } from '../cri/fake-runtime.js';
import { createFakeClock } from '../controllers/fake-clock.js';
import { RecordingEventRecorder } from './event-recorder.js';
import { PodActionsExecutor } from './execute-pod-actions.js';
import { ImagePuller } from './image-puller.js';
import { PodReconciler } from './pod-reconciler.js';
import { RestartBackoff } from './restart-backoff.js';
import type { StatusWriter } from './status-manager.js';
import { basePod, UID } from './test-fixtures.js';
import { createVolumeManager, type VolumeSourceApi } from './volumes/index.js';

const noApi: VolumeSourceApi = {
  readConfigMap: () => Promise.resolve(undefined),
  readSecret: () => Promise.resolve(undefined),
  requestServiceAccountToken: () => Promise.reject(new Error('no tokens in this test')),
};

interface Harness {
  readonly runtime: FakeRuntime;
  readonly store: Map<string, V1Pod>;
  readonly statuses: V1PodStatus[];
  readonly deleted: string[];
  readonly events: RecordingEventRecorder;
  readonly paused: { value: boolean };
  readonly reconciler: PodReconciler;
}

function harness(root: string): Harness {
  const clock = createFakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const runtime = new FakeRuntime({ now: () => clock.now(), images: ['docker.io/library/busybox:1.35'] });
  const store = new Map<string, V1Pod>();
  const statuses: V1PodStatus[] = [];
  const deleted: string[] = [];
  const status: StatusWriter = {
    setPodStatus: (pod, s) => {
      statuses.push(s);
      store.set(pod.metadata?.uid ?? '', { ...pod, status: s });
      return Promise.resolve();
    },
    deletePod: (pod) => {
      deleted.push(pod.metadata?.uid ?? '');
      store.delete(pod.metadata?.uid ?? '');
      return Promise.resolve();
    },
    forget: () => undefined,
  };
  const events = new RecordingEventRecorder();
  const paused = { value: false };
  const logger = pino({ level: 'silent' });
  const restartBackoff = new RestartBackoff();
  const volumes = createVolumeManager({ rootDir: root, api: noApi, logger });
  const puller = new ImagePuller({ images: runtime, events, clock });
  const executor = new PodActionsExecutor({
    runtime,
    puller,
    restartBackoff,
    clock,
    volumes,
    envApi: noApi,
    events,
    nodeName: 'node-a',
    nodeIp: '10.213.0.1',
    podLogDir: path.join(root, 'logs'),
    rootDir: root,
    nodeAllocatable: { milliCpu: 2000, memoryBytes: 2 ** 32 },
    logger,
  });
  const reconciler = new PodReconciler({
    store: { get: (uid) => store.get(uid), synced: () => true },
    runtime,
    executor,
    status,
    volumes,
    events,
    restartBackoff,
    puller,
    nodeName: 'node-a',
    nodeIp: '10.213.0.1',
    runtimeName: 'containerd',
    clock,
    logger,
    admission: { isPaused: () => paused.value },
  });
  return { runtime, store, statuses, deleted, events, paused, reconciler };
}

const ref = { uid: UID, namespace: 'default', name: 'web' };

describe('PodReconciler admission (NodeAgent paused)', () => {
  let root = '';
  let h: Harness;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-admission-'));
    h = harness(root);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('holds a new pod Pending with its containers ContainerCreating and a NodeletPaused event, then starts it once unpaused', async () => {
    h.paused.value = true;
    h.store.set(UID, basePod());
    const outcome = await h.reconciler.reconcile(ref);
    assert.deepEqual(outcome, {});
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 0);
    const held = h.statuses.at(-1);
    assert.equal(held?.phase, 'Pending');
    assert.deepEqual(held?.containerStatuses?.map((c) => c.state?.waiting?.reason), ['ContainerCreating', 'ContainerCreating']);
    assert.deepEqual(h.events.reasons(), ['NodeletPaused']);
    h.paused.value = false;
    await h.reconciler.reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    assert.equal(h.statuses.at(-1)?.phase, 'Running');
  });

  it('keeps a running pod running and restarts its exited container while paused', async () => {
    h.store.set(UID, basePod());
    await h.reconciler.reconcile(ref);
    h.paused.value = true;
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 1);
    await h.reconciler.reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    assert.equal(h.runtime.callsTo('stopPodSandbox').length, 0);
    assert.equal(h.statuses.at(-1)?.containerStatuses?.find((c) => c.name === 'app')?.restartCount, 1);
    assert.ok(!h.events.reasons().includes('NodeletPaused'));
  });

  it('still deletes a pod while paused', async () => {
    h.store.set(UID, basePod());
    await h.reconciler.reconcile(ref);
    h.paused.value = true;
    h.store.set(UID, basePod((p) => {
      p.metadata!.deletionTimestamp = new Date();
      p.metadata!.deletionGracePeriodSeconds = 1;
      p.status = h.statuses.at(-1);
    }));
    await h.reconciler.reconcile(ref);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
    assert.deepEqual(h.deleted, [UID]);
  });
});
