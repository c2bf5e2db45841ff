/**
 * The status manager against the test cluster's real kube-apiserver (v1.36). Pods are bound by
 * `spec.nodeName` to a Node object this test registers and no agent runs, so the status manager
 * under test is the only nodelet writing their status and no reconcile ever happens (the runtime
 * is checked to hold nothing of them). Statuses are generated from plain runtime observations.
 *
 * Proves: a condition another client wrote survives nodelet's writes while an owned type nodelet
 * stops reporting is removed; what the server does with the patch's lists (container statuses
 * replaced whole, IP lists replaced, condition fields cleared) and its UID precondition; and that
 * a single container's readiness reaches the API at once, without a reconcile.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ApiException, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, Watch, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import { isAlreadyExists, isInvalidField, isNotFound } from '../../util/api-errors.js';
import { systemClock } from '../../util/clock.js';
import { podKeyOf } from '../../util/pod-key.js';
import type { ObservedContainer, ObservedPod } from '../../reconcilers/model/observed-pod.js';
import { ContainerReadinessStore } from '../../reconcilers/probes/container-readiness.js';
import { generatePodStatus } from '../../reconcilers/status/generate-pod-status.js';
import { StatusManager, podStatusApi, statusPatch } from '../../reconcilers/status/status-manager.js';
import { isPodGone } from '../../reconcilers/status/status-patch.js';
import { container, sandbox } from '../doubles/pod-fixtures.js';
import { containersOf, sandboxesOf } from '../e2e/helpers.js';
import { kubeClientFrom } from '../doubles/kube-client.js';
import { CoreV1Client } from '../../kube/core-v1.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const GATE = 'example.com/gate';

async function ignoreNotFound(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err: unknown) {
    if (!isNotFound(err)) throw err;
  }
}

function describeError(err: unknown): string {
  if (err instanceof ApiException) return `${err.code} ${JSON.stringify(err.body)}`;
  return err instanceof Error ? err.message : 'no error';
}

function conditionTypes(pod: V1Pod): string[] {
  return (pod.status?.conditions ?? []).map((c) => c.type).sort();
}

function conditionOf(pod: V1Pod, type: string): { status?: string; reason?: string; message?: string } | undefined {
  return pod.status?.conditions?.find((c) => c.type === type);
}

describe('status manager against the real API server', () => {
  const suffix = randomBytes(4).toString('hex');
  const namespace = `it-status-${suffix}`;
  const nodeName = `status-test-node-${suffix}`;
  const kubeConfig = new KubeConfig();
  let core: CoreV1Api;
  /** The same admin credentials through the agent's own client, for the code under test. */
  const ownCore = new CoreV1Client(kubeClientFrom());
  const managers: StatusManager[] = [];

  function manager(): StatusManager {
    const m = new StatusManager({ api: podStatusApi(ownCore), clock: systemClock, logger, readiness: new ContainerReadinessStore() });
    managers.push(m);
    return m;
  }

  async function createPod(name: string, mutate?: (pod: V1Pod) => void): Promise<V1Pod> {
    const body: V1Pod = {
      metadata: { name },
      spec: {
        nodeName,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: 'docker.io/library/busybox:1.35', command: ['sleep', '3600'] }],
      },
    };
    mutate?.(body);
    return core.createNamespacedPod({ namespace, body });
  }

  const readPod = (name: string): Promise<V1Pod> => core.readNamespacedPodStatus({ name, namespace });

  /** What the runtime would show for `pod`: a ready sandbox and these containers running. */
  function observed(pod: V1Pod, names: readonly string[], ip = '10.214.0.5'): ObservedPod {
    const containers: ObservedContainer[] = names.map((n) => container(pod, n));
    return { uid: pod.metadata?.uid ?? '', sandboxes: [sandbox({ ip })], containers };
  }

  function generated(pod: V1Pod, obs: ObservedPod): V1PodStatus {
    return generatePodStatus({ pod, observed: obs, nodeIp: '10.213.0.1', runtimeName: 'containerd', now: new Date(Math.floor(Date.now() / 1000) * 1000), startFailures: new Map() });
  }

  before(async () => {
    const path = process.env.KUBECONFIG ?? '';
    assert.ok(path !== '', 'KUBECONFIG is not set: run the test through /tmp/nl/with-cluster.sh or `source .cluster/env`');
    kubeConfig.loadFromFile(path);
    core = kubeConfig.makeApiClient(CoreV1Api);
    // A Node object keeps the pod GC from deleting the pods as orphans; nothing runs as this node.
    await core.createNode({ body: { metadata: { name: nodeName } } });
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    try {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } });
    } catch (err: unknown) {
      if (!isAlreadyExists(err)) throw err;
    }
  });

  after(async () => {
    for (const m of managers) await m.stop();
    const pods = await core.listNamespacedPod({ namespace });
    for (const p of pods.items) await ignoreNotFound(() => core.deleteNamespacedPod({ name: p.metadata?.name ?? '', namespace, gracePeriodSeconds: 0 }));
    await ignoreNotFound(() => core.deleteNamespace({ name: namespace }));
    await ignoreNotFound(() => core.deleteNode({ name: nodeName }));
  });

  it('keeps a readiness-gate condition another client wrote, and removes an owned condition type it stops reporting', async () => {
    const created = await createPod('gated', (p) => (p.spec!.readinessGates = [{ conditionType: GATE }]));
    // Another controller sets the gate; nodelet's view of the pod (`created`) predates it.
    await core.patchNamespacedPodStatus(
      { name: 'gated', namespace, body: { status: { conditions: [{ type: GATE, status: 'True', lastTransitionTime: new Date() }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const m = manager();
    m.setPodStatus(created, generated(created, observed(created, ['main'])));
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written');
    const afterStale = await readPod('gated');
    // PodScheduled: the kubelet's, added to a pod no scheduler saw (this one was created with its node name).
    assert.deepEqual(conditionTypes(afterStale), ['ContainersReady', 'Initialized', 'PodReadyToStartContainers', 'PodScheduled', 'Ready', GATE].sort());
    assert.equal(conditionOf(afterStale, GATE)?.status, 'True', 'the gate condition another client wrote was lost');

    // From a fresh view the gate is met: Ready. Then PodReadyToStartContainers is no longer reported.
    const fresh = generated(afterStale, observed(afterStale, ['main']));
    m.setPodStatus(afterStale, fresh);
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written');
    assert.equal(conditionOf(await readPod('gated'), 'Ready')?.status, 'True');
    const withoutOne = { ...fresh, conditions: fresh.conditions?.filter((c) => c.type !== 'PodReadyToStartContainers') };
    m.setPodStatus(await readPod('gated'), withoutOne);
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written');
    const final = await readPod('gated');
    assert.deepEqual(conditionTypes(final), ['ContainersReady', 'Initialized', 'PodScheduled', 'Ready', GATE].sort());
    assert.equal(conditionOf(final, GATE)?.status, 'True');
    assert.deepEqual(await sandboxesOf(created.metadata?.uid ?? ''), [], 'something ran the pod');
  });

  it('replaces container statuses and IPs, clears condition fields, and refuses a patch for another UID', async () => {
    const created = await createPod('lists', (p) => p.spec!.containers.push({ name: 'helper', image: 'docker.io/library/busybox:1.35' }));
    const m = manager();
    // helper not created yet: Ready False with a reason and a message.
    m.setPodStatus(created, generated(created, observed(created, ['main'])));
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written');
    const first = await readPod('lists');
    assert.deepEqual(first.status?.containerStatuses?.map((c) => c.name), ['main', 'helper']);
    assert.equal(conditionOf(first, 'Ready')?.reason, 'ContainersNotReady');

    // Both run now, in a new sandbox with a new IP; helper is no longer reported at all.
    const second = generated(first, observed(first, ['main', 'helper'], '10.214.0.6'));
    m.setPodStatus(first, { ...second, containerStatuses: second.containerStatuses?.filter((c) => c.name === 'main') });
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written (an IP list merged with the old one is invalid)');
    const after2 = await readPod('lists');
    assert.deepEqual(after2.status?.containerStatuses?.map((c) => c.name), ['main'], 'a container status nodelet no longer reports stayed');
    assert.deepEqual(after2.status?.podIPs?.map((p) => p.ip), ['10.214.0.6'], 'the old sandbox IP lingered');
    assert.equal(after2.status?.podIP, '10.214.0.6');
    assert.equal(conditionOf(after2, 'Ready')?.status, 'True');
    assert.equal(conditionOf(after2, 'Ready')?.reason, undefined, 'a True Ready kept the old reason');
    assert.equal(conditionOf(after2, 'Ready')?.message, undefined, 'a True Ready kept the old message');

    // The UID travels in the patch: a patch meant for another pod with this name is refused.
    const forOther = statusPatch('00000000-0000-0000-0000-000000000000', { ...second, message: 'must not land' });
    const refused = await core
      .patchNamespacedPodStatus({ name: 'lists', namespace, body: forOther }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch))
      .then(() => undefined, (err: unknown) => err);
    assert.ok(isInvalidField(refused, 'metadata.uid'), `expected 422 on metadata.uid, got ${describeError(refused)}`);
    assert.ok(isPodGone(refused));
    await podStatusApi(ownCore).patchStatus({ ...podKeyOf(created), uid: '00000000-0000-0000-0000-000000000000' }, forOther);
    assert.equal((await readPod('lists')).status?.message, undefined);
  });

  it('setContainerReadiness reaches the API at once, with no reconcile', async () => {
    const created = await createPod('probed');
    const key = podKeyOf(created);
    const m = manager();
    m.setPodStatus(created, generated(created, observed(created, ['main'])));
    await m.settled();
    assert.equal(m.pendingCount(), 0, 'the status was not written');
    const before = await readPod('probed');
    assert.equal(before.status?.containerStatuses?.[0]?.ready, true);

    for (const ready of [false, true]) {
      const seen = watchUntil(key.name, before.metadata?.resourceVersion ?? '', (pod) => pod.status?.containerStatuses?.[0]?.ready === ready);
      await sleep(200); // let the watch establish before the change
      const start = performance.now();
      await m.setContainerReadiness(key, 'containerd://c-main', ready);
      const resolvedMs = performance.now() - start;
      assert.equal(m.pendingCount(), 0, 'the readiness change was not written');
      const visibleMs = (await seen) - start;
      console.log(`readiness=${ready} reached the API in ${visibleMs.toFixed(1)} ms (setContainerReadiness resolved after ${resolvedMs.toFixed(1)} ms)`);
      const now = await readPod('probed');
      assert.equal(now.status?.containerStatuses?.[0]?.ready, ready);
      assert.equal(conditionOf(now, 'ContainersReady')?.status, ready ? 'True' : 'False');
      assert.equal(conditionOf(now, 'Ready')?.status, ready ? 'True' : 'False');
      if (!ready) assert.equal(conditionOf(now, 'Ready')?.message, 'containers with unready status: [main]');
    }
    // No agent ran this pod: the runtime holds nothing of it, so no reconcile wrote these statuses.
    assert.deepEqual(await sandboxesOf(key.uid), []);
    assert.deepEqual(await containersOf(key.uid), []);
  });

  /** Resolves with the `performance.now()` at which a watch event first satisfied `match`. */
  async function watchUntil(name: string, resourceVersion: string, match: (pod: V1Pod) => boolean, timeoutMs = 10_000): Promise<number> {
    let controller: AbortController | undefined;
    try {
      return await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`no watch event matched within ${timeoutMs} ms`));
        }, timeoutMs);
        new Watch(kubeConfig)
          .watch(
            `/api/v1/namespaces/${namespace}/pods`,
            { fieldSelector: `metadata.name=${name}`, resourceVersion },
            (_phase: string, obj: V1Pod) => {
              if (match(obj)) {
                clearTimeout(timer);
                resolve(performance.now());
              }
            },
            (err: unknown) => {
              if (err !== null && err !== undefined) reject(err instanceof Error ? err : new Error('the watch ended with a non-Error'));
            },
          )
          .then(
            (c) => {
              controller = c;
            },
            reject,
          );
      });
    } finally {
      controller?.abort();
    }
  }
});
