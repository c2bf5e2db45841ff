import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { buildSnapshot, diffSnapshots, holdBackChanges, Pleg, runtimeCounts, type PlegRelist } from './pleg.js';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import type { ContainerConfig, PodSandbox, PodSandboxFilter } from '../../cri/types.js';
import { observePod } from '../../reconcilers/runtime/observe-pod.js';
import { emptyObservation } from '../../reconcilers/model/observed-pod.js';
import { observedFingerprint, RuntimeSightings } from '../../reconcilers/model/runtime-sightings.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** A sink that notes each runtime change as `<uid>:<change>`, and any other event as `<uid>:<kind>`. */
function runtimeEventsInto(seen: string[]): PodEventSink {
  return { emit: (e) => seen.push(`${e.key.uid}:${e.kind === 'runtime-changed' ? e.change : e.kind}`) };
}

const labels = (uid: string) => ({ 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': `p-${uid}`, 'io.kubernetes.pod.namespace': 'ns', 'nodelet.dev/node': 'n' });

describe('PLEG snapshots', () => {
  const before = buildSnapshot([
    { kind: 'sandbox', id: 's1', state: 'SANDBOX_READY', labels: labels('a') },
    { kind: 'container', id: 'c1', state: 'CONTAINER_RUNNING', labels: labels('a') },
    { kind: 'sandbox', id: 's2', state: 'SANDBOX_READY', labels: labels('b') },
  ]);

  it('reports nothing when nothing changed', () => {
    assert.deepEqual(diffSnapshots(before, before), []);
  });

  it('reports a pod whose container changed state, one that appeared and one that vanished', () => {
    const after = buildSnapshot([
      { kind: 'sandbox', id: 's1', state: 'SANDBOX_READY', labels: labels('a') },
      { kind: 'container', id: 'c1', state: 'CONTAINER_EXITED', labels: labels('a') },
      { kind: 'sandbox', id: 's3', state: 'SANDBOX_READY', labels: labels('c') },
    ]);
    const changes = diffSnapshots(before, after).map((c) => [c.pod.uid, c.change]);
    assert.deepEqual(changes.sort(), [
      ['a', 'changed'],
      ['b', 'vanished'],
      ['c', 'appeared'],
    ]);
  });

  it('keeps the pod identity from the labels', () => {
    assert.deepEqual(before.get('a')?.pod, { uid: 'a', name: 'p-a', namespace: 'ns' });
  });

  it('ignores runtime objects without a pod UID label', () => {
    assert.equal(buildSnapshot([{ kind: 'sandbox', id: 'x', state: 'SANDBOX_READY', labels: {} }]).size, 0);
  });
});

describe('holdBackChanges', () => {
  const previous = buildSnapshot([
    { kind: 'sandbox', id: 's1', state: 'SANDBOX_READY', labels: labels('a') },
    { kind: 'sandbox', id: 's3', state: 'SANDBOX_READY', labels: labels('c') },
  ]);
  const current = buildSnapshot([
    { kind: 'sandbox', id: 's1', state: 'SANDBOX_NOTREADY', labels: labels('a') },
    { kind: 'sandbox', id: 's2', state: 'SANDBOX_READY', labels: labels('b') },
  ]);
  const changes = diffSnapshots(previous, current);

  it('keeps the previous record of every held pod (none for one that appeared) and hands on the rest', () => {
    const { snapshot, handOn } = holdBackChanges(previous, current, changes, (uid) => uid !== 'c');
    assert.deepEqual(handOn.map((c) => `${c.pod.uid}:${c.change}`), ['c:vanished']);
    assert.equal(snapshot.get('a')?.fingerprint, previous.get('a')?.fingerprint);
    assert.equal(snapshot.has('b'), false);
    assert.equal(snapshot.has('c'), false);
    assert.deepEqual(diffSnapshots(snapshot, current).map((c) => `${c.pod.uid}:${c.change}`), ['a:changed', 'b:appeared'], 'the next relist finds the held changes again');
  });

  it('hands everything on and keeps the current snapshot when nothing is held', () => {
    const { snapshot, handOn } = holdBackChanges(previous, current, changes, () => false);
    assert.equal(snapshot, current);
    assert.equal(handOn.length, 3);
  });
});

describe('Pleg against the fake runtime', () => {
  it('reports every pod on the first relist, then only pods that changed', async () => {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const sandboxConfig = { metadata: { name: 'p-a', uid: 'a', namespace: 'ns', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels: labels('a'), annotations: {} };
    await runtime.runPodSandbox(sandboxConfig);
    const seen: string[] = [];
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), podEvents: runtimeEventsInto(seen) });
    await pleg.relist();
    assert.deepEqual(seen, ['a:appeared']);
    await pleg.relist();
    assert.equal(seen.length, 1);
    const [sandbox] = await runtime.listPodSandbox();
    await runtime.stopPodSandbox(sandbox?.id ?? '');
    await pleg.relist();
    assert.deepEqual(seen.slice(1), ['a:changed']);
  });

  it('turns unhealthy when no relist succeeded for three minutes', async () => {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), podEvents: { emit: () => undefined } });
    await pleg.relist();
    assert.equal(pleg.healthy(), true);
    await clock.advance(3 * 60_000 + 1);
    assert.equal(pleg.healthy(), false);
  });

  it('relists at start and every period, retries a failed relist at the next tick, and stops', async () => {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const seen: string[] = [];
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), periodMs: 1000, podEvents: { emit: (e) => seen.push(e.key.uid) } });
    const lists = () => runtime.callsTo('listPodSandbox').length;
    pleg.start();
    await settle();
    assert.equal(lists(), 1, 'the first relist runs at start');
    runtime.injectError('listPodSandbox', new Error('runtime unavailable'));
    await runtime.runPodSandbox({ metadata: { name: 'p-a', uid: 'a', namespace: 'ns', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels: labels('a'), annotations: {} });
    await clock.advance(1000);
    assert.equal(lists(), 2);
    assert.deepEqual(seen, [], 'the failed relist reported nothing');
    await clock.advance(1000);
    assert.equal(lists(), 3);
    assert.deepEqual(seen, ['a'], 'the next tick reports the change');
    await pleg.stop();
    await clock.advance(10_000);
    assert.equal(lists(), 3);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('runs an on-demand relist after the one in flight, never alongside it', async () => {
    const clock = createFakeClock();
    let release: () => void = () => undefined;
    let active = 0;
    let maxActive = 0;
    class GatedRuntime extends FakeRuntime {
      override async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
        active += 1;
        maxActive = Math.max(maxActive, active);
        await new Promise<void>((resolve) => (release = resolve));
        active -= 1;
        return super.listPodSandbox(filter);
      }
    }
    const runtime = new GatedRuntime({ now: () => clock.now() });
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), podEvents: { emit: () => undefined } });
    pleg.start();
    const onDemand = pleg.relistNow();
    await settle();
    release();
    await settle();
    release();
    assert.equal(await onDemand, true);
    assert.equal(runtime.callsTo('listPodSandbox').length, 2);
    assert.equal(maxActive, 1);
    await pleg.stop();
  });
});

describe('PLEG with the reconciler\'s sightings', () => {
  const containerConfig = (uid: string): ContainerConfig => ({
    metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' }, command: [], args: [], workingDir: '', envs: [], mounts: [],
    labels: { ...labels(uid), 'io.kubernetes.container.name': 'c' }, annotations: {}, logPath: 'c/0.log', stdin: false, stdinOnce: false, tty: false,
  });
  const sandboxConfig = (uid: string) => ({ metadata: { name: `p-${uid}`, uid, namespace: 'ns', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels: labels(uid), annotations: {} });

  /** A PLEG with sightings over an empty fake runtime, after its first relist; `seen` records what it hands on. */
  async function relistedPleg(inFlight: ReadonlySet<string> = new Set()): Promise<{ runtime: FakeRuntime; sightings: RuntimeSightings; seen: string[]; pleg: Pleg }> {
    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now(), images: ['busybox'] });
    const sightings = new RuntimeSightings();
    const seen: string[] = [];
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), podEvents: runtimeEventsInto(seen), sightings, runInFlight: (uid) => inFlight.has(uid) });
    await pleg.relist();
    return { runtime, sightings, seen, pleg };
  }

  it('holds back the changes of a pod whose reconcile runs, then drops those the run reported and hands on any other', async () => {
    const inFlight = new Set(['a', 'b']);
    const { runtime, sightings, seen, pleg } = await relistedPleg(inFlight);
    // Mid-run states of pods a and b (sandboxes started, containers created): held back.
    const sandboxA = await runtime.runPodSandbox(sandboxConfig('a'));
    const sandboxB = await runtime.runPodSandbox(sandboxConfig('b'));
    await pleg.relist();
    const containerA = await runtime.createContainer(sandboxA, containerConfig('a'), sandboxConfig('a'));
    await runtime.startContainer(containerA);
    await runtime.createContainer(sandboxB, containerConfig('b'), sandboxConfig('b'));
    await pleg.relist();
    assert.deepEqual(seen, [], 'nothing handed on while the runs are in flight');
    // Run a ends, reporting the state it reached; run b ends reporting an older state (its container
    // then changed behind it).
    sightings.reported('a', observedFingerprint(await observePod(runtime, 'a', 'n')));
    sightings.reported('b', observedFingerprint(emptyObservation('b')));
    inFlight.clear();
    await pleg.relist();
    assert.deepEqual(seen, ['b:appeared'], "a's change was its run's own work; b's was not");
    await pleg.relist();
    assert.deepEqual(seen, ['b:appeared'], 'each change handed on once');
  });

  it('drops a change to exactly the state a reconcile reported (observed as the reconciler observes), and only once', async () => {
    const { runtime, sightings, seen, pleg } = await relistedPleg();
    // The reconciler's own work on pod a, reported from its observation (observe-pod.ts: status calls, not the listing).
    const sandboxId = await runtime.runPodSandbox(sandboxConfig('a'));
    await runtime.createContainer(sandboxId, containerConfig('a'), sandboxConfig('a'));
    sightings.reported('a', observedFingerprint(await observePod(runtime, 'a', 'n')));
    // Pod b appeared without a reconcile reporting it: handed on.
    await runtime.runPodSandbox(sandboxConfig('b'));
    await pleg.relist();
    assert.deepEqual(seen, ['b:appeared']);
    assert.equal(sightings.size(), 0, 'the matched report is consumed');
    // A change nobody reported (the sandbox stopped) is handed on.
    await runtime.stopPodSandbox(sandboxId);
    await pleg.relist();
    assert.deepEqual(seen.slice(1), ['a:changed']);
    // The reconciler removes pod a and reports nothing left: the vanishing is its own work.
    for (const c of await runtime.listContainers()) if (c.podSandboxId === sandboxId) await runtime.removeContainer(c.id);
    await runtime.removePodSandbox(sandboxId);
    sightings.reported('a', observedFingerprint(emptyObservation('a')));
    await pleg.relist();
    assert.deepEqual(seen.slice(2), []);
  });

  it('hands on a change when the report describes another state (listed mid-reconcile, or an older report)', async () => {
    const { runtime, sightings, seen, pleg } = await relistedPleg();
    const sandboxId = await runtime.runPodSandbox(sandboxConfig('a'));
    const reportedBefore = observedFingerprint(await observePod(runtime, 'a', 'n'));
    await runtime.createContainer(sandboxId, containerConfig('a'), sandboxConfig('a'));
    sightings.reported('a', reportedBefore);
    await pleg.relist();
    assert.deepEqual(seen, ['a:appeared']);
    assert.equal(sightings.size(), 1);
  });
});

describe('PLEG metrics', () => {
  it('counts pods with a ready sandbox once each, and containers by the kubelet state names', () => {
    const counts = runtimeCounts(
      [
        { state: 'SANDBOX_READY', labels: labels('a') },
        { state: 'SANDBOX_NOTREADY', labels: labels('a') },
        { state: 'SANDBOX_READY', labels: labels('a') },
        { state: 'SANDBOX_NOTREADY', labels: labels('b') },
        { state: 'SANDBOX_READY', labels: labels('c') },
      ],
      [{ state: 'CONTAINER_RUNNING' }, { state: 'CONTAINER_RUNNING' }, { state: 'CONTAINER_EXITED' }, { state: 'CONTAINER_CREATED' }],
    );
    assert.deepEqual(counts, { runningPods: 2, containersByState: { created: 1, running: 2, exited: 1, unknown: 0 } });
  });

  it('reports each relist: its duration, the interval since the last successful one began, and the counts when it succeeded', async () => {
    const clock = createFakeClock();
    class SlowRuntime extends FakeRuntime {
      override async listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
        await clock.advance(200);
        return super.listPodSandbox(filter);
      }
    }
    const runtime = new SlowRuntime({ now: () => clock.now() });
    await runtime.runPodSandbox({ metadata: { name: 'p-a', uid: 'a', namespace: 'ns', attempt: 0 }, hostname: 'p', logDirectory: '/tmp', labels: labels('a'), annotations: {} });
    const relists: PlegRelist[] = [];
    const pleg = new Pleg({ runtime, nodeName: 'n', clock, logger: pino({ level: 'silent' }), podEvents: { emit: () => undefined }, metrics: { relisted: (r) => relists.push(r) } });
    const t0 = clock.now();
    await pleg.relist();
    await clock.advance(800);
    runtime.injectError('listPodSandbox', new Error('runtime unavailable'));
    await assert.rejects(pleg.relist());
    await clock.advance(800);
    await pleg.relist();
    const counts = { runningPods: 1, containersByState: { created: 0, running: 0, exited: 0, unknown: 0 } };
    // startedAtMs: when each relist began (the kubelet's relist time, for kubelet_pleg_last_seen_seconds).
    assert.deepEqual(relists, [
      { durationSeconds: 0.2, startedAtMs: t0, counts },
      { durationSeconds: 0.2, intervalSeconds: 1, startedAtMs: t0 + 1000 },
      { durationSeconds: 0.2, intervalSeconds: 2, startedAtMs: t0 + 2000, counts },
    ]);
  });
});
