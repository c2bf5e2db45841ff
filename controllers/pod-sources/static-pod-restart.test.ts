/**
 * Component test: a static pod whose manifest is removed and written back (the node conformance
 * test "should successfully recreate when file is removed and recreated") keeps its UID and runs
 * again, as the kubelet's pod workers restart it (`restartRequested`, `SyncKnownPods`,
 * `HandlePodCleanups`): the manifest-directory source, the pod event dispatcher, the assembled
 * reconciler (the reconciler harness, over the recording fake runtime), the pod housekeeping and
 * the mirror pod manager, wired as the agent wires them; each queued reconcile run by hand.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import { StaticPodNames } from '../../reconcilers/lifecycle/static-pod-names.js';
import type { PodEvent } from '../../reconcilers/model/pod-event.js';
import { podFlowMetrics } from '../../server/pod-metrics.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';
import { createReconcilerHarness, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { MetricsRegistry } from '../../util/metrics.js';
import type { PodKey } from '../../util/pod-key.js';
import { PodEventDispatcher } from '../pod-events/dispatcher.js';
import { housekeepPods, RESTART_REASON } from '../pod-events/housekeeping.js';
import { createFileSource, type FileSource } from './file-source.js';
import { createMirrorPodManager, type MirrorPodManager } from './mirror-pods.js';

const logger = pino({ level: 'silent' });

function manifest(spec: Record<string, unknown> = {}): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'kube-system' }, spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec } });
}

/** What the reconcile queue was asked, and which UIDs it runs now. */
interface RecordedQueue {
  readonly enqueued: { uid: string; reason: string }[];
  readonly preempted: string[];
  readonly inFlight: Set<string>;
}

describe('a static pod whose manifest is removed and written back', () => {
  let dir = '';
  let file = '';
  let h: ReconcilerHarness;
  let source: FileSource;
  let mirrors: MirrorPodManager;
  let registry: MetricsRegistry;
  let queue: RecordedQueue;
  let events: PodEvent[];
  /** The API's mirror pods by name. */
  const api = new Map<string, V1Pod>();
  let mirrorsCreated = 0;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-static-restart-'));
    file = path.join(dir, 'web.json');
    api.clear();
    mirrorsCreated = 0;
    events = [];
    queue = { enqueued: [], preempted: [], inFlight: new Set() };
    registry = new MetricsRegistry();
    const names = new StaticPodNames({ onReleased: () => void mirrors.syncNow() });
    h = await createReconcilerHarness({ staticPodNames: names, podFlowMetrics: podFlowMetrics(registry) });
    mirrors = createMirrorPodManager({
      api: {
        create: (pod) => {
          mirrorsCreated++;
          api.set(pod.metadata?.name ?? '', { ...pod, metadata: { ...pod.metadata, uid: `mirror-${String(mirrorsCreated)}` } });
          return Promise.resolve();
        },
        delete: (key) => {
          api.delete(key.name);
          return Promise.resolve();
        },
      },
      staticPods: { list: () => source.list(), synced: () => source.synced() },
      apiPods: () => [...api.values()],
      node: () => ({ metadata: { name: 'node-a', uid: 'node-uid' } }),
      podEvents: podEventsTo(() => undefined),
      staticPodNames: names,
      clock: createFakeClock(),
      logger,
    });
    source = newAgentSource();
  });

  afterEach(async () => {
    source.stop();
    await h.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  /** The dispatcher of the current agent (its lifecycle kernel is read at each event: an agent restart replaces it). */
  function dispatcher(): PodEventDispatcher {
    return new PodEventDispatcher({
      queue: {
        enqueue: (ref, reason) => {
          queue.enqueued.push({ uid: ref.uid, reason });
          return Promise.resolve();
        },
        enqueueIfIdle: (ref, reason) => {
          queue.enqueued.push({ uid: ref.uid, reason });
          return Promise.resolve();
        },
        resync: (ref, reason) => {
          queue.enqueued.push({ uid: ref.uid, reason });
          return Promise.resolve();
        },
        preempt: (uid) => {
          queue.preempted.push(uid);
          return queue.inFlight.has(uid);
        },
        runInFlight: (uid) => queue.inFlight.has(uid),
      },
      store: { get: (uid) => h.store.get(uid), synced: () => true },
      lifecycle: { get: (uid) => h.sync().lifecycle.get(uid), requestRestart: (key) => h.sync().lifecycle.requestRestart(key) },
      evictions: { of: (uid) => h.sync().evictions.of(uid) },
      status: { holdsNewest: () => false },
      logger,
    });
  }

  /** The manifest-directory source of an agent: the harness's store holds exactly what it holds, each event dispatched. */
  function newAgentSource(): FileSource {
    const d = dispatcher();
    const created: FileSource = createFileSource({
      dir,
      nodeName: 'node-a',
      logger,
      // A fake clock: no periodic read or debounce fires; the test reads (the watch still tallies).
      clock: createFakeClock(),
      podEvents: podEventsTo((_key, _reason, event) => {
        events.push(event);
        h.store.clear();
        for (const pod of created.list()) h.store.set(pod.metadata?.uid ?? '', pod);
        d.dispatch(event);
      }),
    });
    return created;
  }

  /** Reads the directory until the watch's events since `from` add up to `count` more pod events (2 s at most). */
  async function rescanUntil(from: number, count: number): Promise<void> {
    for (let waited = 0; waited < 2000 && events.length < from + count; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await source.rescan();
    }
  }

  /** As the node conformance test: `os.Remove`, then the same content written back at once; then the reads that see it. */
  async function removeAndWriteBack(content: string): Promise<void> {
    const from = events.length;
    await rm(file);
    await writeFile(file, content);
    await rescanUntil(from, 2);
    assert.deepEqual(events.slice(from).map((e) => (e.kind === 'source-changed' ? e.change : e.kind)), ['vanished', 'added']);
  }

  const containersOf = (uid: string): Promise<{ id: string; state: string }[]> => h.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
  const sandboxesOf = (uid: string): Promise<{ id: string }[]> => h.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
  const appStatus = (): NonNullable<V1PodStatus['containerStatuses']>[number] | undefined => h.status.last()?.containerStatuses?.find((c) => c.name === 'app');
  const restartedTotal = (isStatic: string): string | undefined =>
    registry.text().split('\n').find((l) => l.startsWith(`kubelet_restarted_pods_total{static="${isStatic}"} `))?.split(' ')[1];

  /** Starts the source and runs the pod once; the runtime writes its container's first log file. */
  async function runFromManifest(content = manifest()): Promise<PodKey> {
    await writeFile(file, content);
    await source.start();
    const pod = source.list()[0];
    assert.ok(pod !== undefined);
    const key = { uid: pod.metadata?.uid ?? '', namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '' };
    await h.reconciler().reconcile(key);
    const [app] = await containersOf(key.uid);
    const logPath = h.runtime.getContainer(app?.id ?? '')?.logPath ?? '';
    assert.notEqual(logPath, '');
    await mkdir(path.dirname(logPath), { recursive: true });
    await writeFile(logPath, '{"log":"started"}\n');
    await mirrors.syncNow();
    return key;
  }

  const housekeeping = (): Promise<void> =>
    housekeepPods({
      reconciler: h.reconciler(),
      queue: {
        runInFlight: (uid) => queue.inFlight.has(uid),
        enqueue: (ref, reason) => {
          queue.enqueued.push({ uid: ref.uid, reason });
          return Promise.resolve();
        },
      },
      logger,
    });

  it('stops and removes it, then runs it again under the same UID: a second sandbox, its container at restart count 1, counted once', async () => {
    const key = await runFromManifest();
    const [firstSandbox] = await sandboxesOf(key.uid);
    const [firstApp] = await containersOf(key.uid);
    assert.equal(restartedTotal('true'), '0', 'both series from the start, as the kubelet writes them');
    assert.equal(restartedTotal(''), '0');

    await removeAndWriteBack(manifest());
    const lifecycle = h.sync().lifecycle;
    assert.equal(lifecycle.get(key.uid)?.restartRequested, true, 'the UID came back while the pod ran: its restart is requested');
    assert.ok(queue.preempted.includes(key.uid), 'its sync in flight, if any, is cancelled');

    // The run the events asked for stops the pod as it ran and removes it.
    await h.reconciler().reconcile(key);
    assert.deepEqual(await containersOf(key.uid), []);
    assert.deepEqual(await sandboxesOf(key.uid), []);
    assert.equal(lifecycle.get(key.uid)?.phase, 'terminated');
    assert.ok(lifecycle.get(key.uid)?.removedAt !== undefined);
    assert.equal(lifecycle.admit(key), false, 'nothing starts it before it is forgotten');
    // A run queued meanwhile leaves it to the housekeeping, without a runtime call.
    const calls = h.runtime.calls.length;
    assert.deepEqual(await h.reconciler().reconcile(key), {});
    assert.equal(h.runtime.calls.length, calls);
    assert.equal(restartedTotal('true'), '0', 'not restarted yet');

    // The housekeeping forgets it and asks for the run that admits it afresh.
    await housekeeping();
    assert.equal(lifecycle.get(key.uid), undefined);
    assert.deepEqual(queue.enqueued.filter((e) => e.reason === RESTART_REASON), [{ uid: key.uid, reason: RESTART_REASON }]);
    assert.equal(restartedTotal('true'), '1');
    assert.equal(restartedTotal(''), '0');

    await h.reconciler().reconcile(key);
    const [secondSandbox] = await sandboxesOf(key.uid);
    const [secondApp] = await containersOf(key.uid);
    assert.ok(secondSandbox !== undefined && secondSandbox.id !== firstSandbox?.id, 'a second sandbox');
    assert.ok(secondApp !== undefined && secondApp.id !== firstApp?.id && secondApp.state === 'CONTAINER_RUNNING', 'its container started again');
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 2);
    assert.equal(h.status.last()?.phase, 'Running');
    assert.equal(appStatus()?.restartCount, 1, 'the restart count its log directory gives, as the kubelet');
    assert.equal(lifecycle.get(key.uid)?.phase, 'syncing');
    assert.equal(lifecycle.get(key.uid)?.restartRequested, undefined);

    // Its mirror pod is there; and nothing restarts it again.
    await mirrors.syncNow();
    assert.ok(api.get(key.name) !== undefined, 'the mirror pod is back');
    await housekeeping();
    await h.reconciler().reconcile(key);
    assert.equal(restartedTotal('true'), '1', 'counted once');
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 2);
  });

  it('lets a termination in flight finish before the pod runs again: the old and the new containers never overlap', async () => {
    let releaseHook: () => void = () => undefined;
    h.runtime.execHandler = () =>
      new Promise((resolve) => {
        releaseHook = () => {
          resolve({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });
        };
      });
    const content = manifest({ terminationGracePeriodSeconds: 20, containers: [{ name: 'app', image: 'busybox', lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 5'] } } } }] });
    const key = await runFromManifest(content);
    const lifecycle = h.sync().lifecycle;

    // The manifest is removed; the run of the gone pod stops it, held by its preStop hook.
    let from = events.length;
    await rm(file);
    await rescanUntil(from, 1);
    queue.inFlight.add(key.uid);
    const gone = h.reconciler().reconcile(key);
    for (let i = 0; i < 200 && h.runtime.callsTo('execSync').length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(lifecycle.get(key.uid)?.phase, 'terminating');

    // Written back meanwhile: the restart is requested; the stop in flight is not cancelled.
    from = events.length;
    const preempted = queue.preempted.length;
    await writeFile(file, content);
    await rescanUntil(from, 1);
    assert.equal(lifecycle.get(key.uid)?.restartRequested, true);
    assert.equal(queue.preempted.length, preempted, 'a stop in flight goes on');
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1, 'nothing new starts beside the old pod');

    releaseHook();
    assert.deepEqual(await gone, {});
    queue.inFlight.delete(key.uid);
    assert.deepEqual(await containersOf(key.uid), [], 'the old run is gone');
    assert.equal(lifecycle.get(key.uid)?.phase, 'terminated', 'kept for the restart, not forgotten by the run');
    assert.ok(lifecycle.get(key.uid)?.removedAt !== undefined);

    // The run the add queued waits for the housekeeping; then the pod runs again.
    await h.reconciler().reconcile(key);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    await housekeeping();
    await h.reconciler().reconcile(key);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 2);
    const methods = h.runtime.calls.map((c) => c.method);
    assert.ok(methods.lastIndexOf('removePodSandbox') < methods.lastIndexOf('runPodSandbox'), 'the old sandbox was removed before the new one was made');
    assert.equal(appStatus()?.restartCount, 1);
    assert.equal(restartedTotal('true'), '1');
  });

  it('forgets a pod written back and removed again before its restart, as any pod gone from its source: no restart', async () => {
    const key = await runFromManifest();
    await removeAndWriteBack(manifest());
    await h.reconciler().reconcile(key);
    const from = events.length;
    await rm(file);
    await rescanUntil(from, 1);
    await h.reconciler().reconcile(key);
    await housekeeping();
    assert.equal(h.sync().lifecycle.get(key.uid), undefined, 'forgotten');
    assert.deepEqual(queue.enqueued.filter((e) => e.reason === RESTART_REASON), []);
    assert.equal(restartedTotal('true'), '0');
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    await mirrors.syncNow();
    assert.equal(api.get(key.name), undefined, 'its mirror pod goes');
  });

  it('does not restart a finished pod an agent restart finds still in its source: a first sighting', async () => {
    const key = await runFromManifest(manifest({ restartPolicy: 'Never' }));
    const [app] = await containersOf(key.uid);
    h.runtime.setContainerExited(app?.id ?? '', 0);
    await h.reconciler().reconcile(key);
    assert.equal(h.sync().lifecycle.get(key.uid)?.phase, 'terminated');

    // The agent restarts: nothing kept in memory; the new source adds every pod it reads.
    source.stop();
    h.restartAgent();
    source = newAgentSource();
    const from = events.length;
    await source.start();
    assert.deepEqual(events.slice(from).map((e) => (e.kind === 'source-changed' ? e.change : e.kind)), ['added']);
    await h.reconciler().reconcile(key);
    await housekeeping();
    await h.reconciler().reconcile(key);
    assert.equal(h.sync().lifecycle.get(key.uid)?.phase, 'terminated');
    assert.equal(h.sync().lifecycle.get(key.uid)?.restartRequested, undefined);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1, 'it does not run again');
    assert.equal(restartedTotal('true'), '0');
  });
});
