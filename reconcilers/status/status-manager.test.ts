import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock, settle, type FakeClock } from '../../test/doubles/fake-clock.js';
import { basePod, container, observation, sandbox } from '../../test/doubles/pod-fixtures.js';
import type { PodKey } from '../../util/pod-key.js';
import { ContainerReadinessStore } from '../probes/container-readiness.js';
import { generatePodStatus } from './generate-pod-status.js';
import { StatusManager, type PodStatusApi } from './status-manager.js';

interface Patched {
  metadata: { uid: string };
  status: { phase?: string; containerStatuses?: V1ContainerStatus[]; conditions: (V1PodCondition & { $patch?: string })[]; podIP?: string | null };
}

class FlakyApi implements PodStatusApi {
  readonly patches: Patched[] = [];
  readonly deletes: PodKey[] = [];
  down = false;
  /** While set, patches wait for it (a write in flight). */
  gate: Promise<void> | undefined;
  async patchStatus(_key: PodKey, body: Record<string, unknown>): Promise<void> {
    await this.gate;
    if (this.down) throw new Error('connect ECONNREFUSED');
    this.patches.push(body as unknown as Patched);
  }
  deletePod(key: PodKey): Promise<void> {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    this.deletes.push(key);
    return Promise.resolve();
  }
  last(): Patched {
    const patch = this.patches.at(-1);
    assert.ok(patch !== undefined, 'no patch was sent');
    return patch;
  }
}

const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1' }, status: { phase: 'Pending' } };
const running: V1PodStatus = { phase: 'Running', startTime: new Date('2026-01-01T00:00:00.456Z') };

interface Setup {
  m: StatusManager;
  clock: FakeClock;
  store: ContainerReadinessStore;
}

function manager(api: PodStatusApi): Setup {
  const clock = createFakeClock();
  const store = new ContainerReadinessStore();
  return { m: new StatusManager({ api, clock, logger: pino({ level: 'silent' }), readiness: store, retryPeriodMs: 1000 }), clock, store };
}

describe('StatusManager: full statuses', () => {
  it('measures each status from its hand-over until the API holds it, across an outage (kubelet_pod_status_sync_duration_seconds)', async () => {
    const api = new FlakyApi();
    const clock = createFakeClock();
    const synced: number[] = [];
    const m = new StatusManager({ api, clock, logger: pino({ level: 'silent' }), readiness: new ContainerReadinessStore(), retryPeriodMs: 1000, metrics: { statusSynced: (s) => synced.push(s) } });
    api.down = true;
    m.setPodStatus(pod, running);
    await m.settled();
    assert.deepEqual(synced, [], 'not written, not measured');
    await clock.advance(3000);
    api.down = false;
    m.start();
    await clock.advance(1000);
    await m.settled();
    await m.stop();
    assert.equal(api.patches.length, 1);
    assert.equal(synced.length, 1);
    assert.ok((synced[0] ?? 0) >= 3, `from the hand-over, outage included: ${String(synced[0])}`);
  });

  it('writes a new status once, with the pod UID as a precondition, and skips an identical one', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    m.setPodStatus(pod, running);
    await m.settled();
    m.setPodStatus(pod, { ...running, startTime: new Date('2026-01-01T00:00:00Z') });
    await m.settled();
    assert.equal(api.patches.length, 1);
    assert.deepEqual(api.last().metadata, { uid: 'u1' });
  });

  it('hands a status over without waiting for the API server, writes one pod\'s statuses in order, and stop waits for them', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    m.start();
    let open = (): void => undefined;
    api.gate = new Promise<void>((resolve) => (open = resolve));
    m.setPodStatus(pod, running);
    await settle();
    m.setPodStatus(pod, { ...running, phase: 'Succeeded' });
    assert.equal(m.podStatus('u1')?.phase, 'Succeeded', 'the newest status is held at once');
    assert.equal(api.patches.length, 0, 'the first write is still in flight');
    let stopped = false;
    const stopping = m.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false, 'stop waits for the writes in flight');
    open();
    await stopping;
    assert.deepEqual(api.patches.map((p) => p.status.phase), ['Running', 'Succeeded']);
    assert.equal(m.pendingCount(), 0);
  });

  it('tells the echo of its own write from another writer\'s status: the newest status handed over, as the API holds it', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    assert.equal(m.holdsNewest({ ...pod, status: running }), false, 'no status handed over yet');
    m.setPodStatus(pod, running);
    await m.settled();
    const echo: V1Pod = { ...pod, status: { ...running, startTime: new Date('2026-01-01T00:00:00Z'), nominatedNodeName: 'not-ours' } };
    assert.equal(m.holdsNewest(echo), true, 'the write as the API server holds it (second precision, fields of other writers beside it)');
    assert.equal(m.holdsNewest({ ...pod, status: { ...running, phase: 'Failed' } }), false, 'another writer changed an owned field');
    m.setPodStatus(pod, { ...running, phase: 'Succeeded' });
    assert.equal(m.holdsNewest(echo), false, 'an older write is not the newest status');
  });

  it('does not write a status the API server already holds', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    m.setPodStatus({ ...pod, status: running }, running);
    await m.settled();
    assert.equal(api.patches.length, 0);
  });

  it('keeps a status it could not write and writes the newest one when the API server is back', async () => {
    const api = new FlakyApi();
    const { m, clock } = manager(api);
    m.start();
    api.down = true;
    m.setPodStatus(pod, running);
    await m.settled();
    m.setPodStatus(pod, { ...running, phase: 'Succeeded' });
    await m.settled();
    assert.equal(m.pendingCount(), 1);
    await clock.advance(1000);
    assert.equal(m.pendingCount(), 1, 'still down: still pending');
    api.down = false;
    await clock.advance(1000);
    assert.equal(m.pendingCount(), 0);
    assert.equal(api.patches.length, 1);
    assert.equal(api.last().status.phase, 'Succeeded');
    await m.stop();
  });

  it('writes the pending final status before deleting the pod, and refuses to delete when it cannot', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    api.down = true;
    m.setPodStatus(pod, { phase: 'Failed' });
    await m.settled();
    await assert.rejects(m.deletePod(pod));
    assert.equal(api.deletes.length, 0);
    api.down = false;
    await m.deletePod(pod);
    assert.equal(api.patches.length, 1);
    assert.deepEqual(api.deletes, [{ namespace: 'ns', name: 'web', uid: 'u1' }]);
  });
});

// A pod with two running containers (`app`, `sidecar`), its status generated at T0.
const T0 = new Date('2026-01-01T00:05:00Z');
const app = basePod();
const key: PodKey = { uid: 'uid-1', namespace: 'default', name: 'web' };
const runningObserved = observation([sandbox()], [container(app, 'app'), container(app, 'sidecar')]);

function fullStatus(store: ContainerReadinessStore | undefined, now = T0, observed = runningObserved): V1PodStatus {
  const probeResults = store?.resultsOf(key.uid);
  return generatePodStatus({ pod: app, observed, nodeIp: '10.213.0.1', runtimeName: 'containerd', now, startFailures: new Map(), ...(probeResults === undefined ? {} : { probeResults }) });
}

function conditionOf(patch: Patched, type: string): V1PodCondition | undefined {
  return patch.status.conditions.find((c) => c.type === type);
}

function appStatus(patch: Patched): V1ContainerStatus | undefined {
  return patch.status.containerStatuses?.find((c) => c.name === 'app');
}

describe('StatusManager: setContainerReadiness / setContainerStartup', () => {
  it('writes a readiness change at once, recomputing ContainersReady and Ready and stamping only the conditions that changed', async () => {
    const api = new FlakyApi();
    const { m, clock } = manager(api);
    m.setPodStatus(app, fullStatus(undefined));
    await m.settled();
    assert.equal(conditionOf(api.last(), 'Ready')?.status, 'True');
    await clock.advance(7_500);
    await m.setContainerReadiness(key, 'containerd://c-app', false);
    assert.equal(api.patches.length, 2);
    const patch = api.last();
    const changedAt = new Date(Math.floor(clock.now() / 1000) * 1000);
    assert.equal(appStatus(patch)?.ready, false);
    assert.equal(patch.status.containerStatuses?.find((c) => c.name === 'sidecar')?.ready, true);
    assert.deepEqual(conditionOf(patch, 'ContainersReady'), { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]', lastTransitionTime: changedAt, lastProbeTime: null, observedGeneration: null });
    assert.equal(conditionOf(patch, 'Ready')?.status, 'False');
    assert.deepEqual(conditionOf(patch, 'Ready')?.lastTransitionTime, changedAt);
    assert.deepEqual(conditionOf(patch, 'PodReadyToStartContainers')?.lastTransitionTime, T0);
    assert.deepEqual(patch.metadata, { uid: 'uid-1' });

    // Still not ready, for one more reason: the transition time stays.
    await clock.advance(5_000);
    await m.setContainerReadiness(key, 'c-sidecar', false);
    assert.equal(conditionOf(api.last(), 'ContainersReady')?.message, 'containers with unready status: [app sidecar]');
    assert.deepEqual(conditionOf(api.last(), 'ContainersReady')?.lastTransitionTime, changedAt);

    await m.setContainerReadiness(key, 'c-sidecar', true);
    await m.setContainerReadiness(key, 'c-app', true);
    assert.equal(api.patches.length, 5);
    assert.equal(conditionOf(api.last(), 'Ready')?.status, 'True');
    assert.equal(conditionOf(api.last(), 'Ready')?.reason, null);
  });

  it('reports a container neither started nor ready while its startup probe has not succeeded', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    m.setPodStatus(app, fullStatus(undefined));
    await m.settled();
    await m.setContainerStartup(key, 'c-app', false);
    assert.equal(appStatus(api.last())?.started, false);
    assert.equal(appStatus(api.last())?.ready, false);
    assert.equal(conditionOf(api.last(), 'ContainersReady')?.status, 'False');
  });

  it('ignores a result for a container ID that is not the current one of its name, and one before any status', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    await m.setContainerReadiness(key, 'c-app', false);
    assert.equal(api.patches.length, 0, 'no status held yet: nothing to update');
    m.setPodStatus(app, fullStatus(undefined, T0, observation([sandbox()], [container(app, 'app', { id: 'c-app-2' }), container(app, 'sidecar')])));
    await m.settled();
    await m.setContainerReadiness(key, 'containerd://c-app-1', false);
    assert.equal(api.patches.length, 1);
    assert.equal(appStatus(api.last())?.ready, true);
  });

  it('keeps a readiness result through later full statuses, however they were generated', async () => {
    const api = new FlakyApi();
    const { m, clock, store } = manager(api);
    m.setPodStatus(app, fullStatus(undefined));
    await m.settled();
    await m.setContainerReadiness(key, 'c-app', false);
    await clock.advance(3_000);
    // A reconcile's status generated from the store reports it…
    assert.equal(fullStatus(store).containerStatuses?.find((c) => c.name === 'app')?.ready, false);
    // …and one generated before the result (a race with a reconcile in flight) cannot undo it.
    const staleWithNewIp = fullStatus(undefined, T0, observation([sandbox({ ip: '10.214.0.6' })], [container(app, 'app'), container(app, 'sidecar')]));
    m.setPodStatus({ ...app, status: staleWithNewIp }, staleWithNewIp);
    await m.settled();
    assert.equal(api.patches.length, 3);
    assert.equal(api.last().status.podIP, '10.214.0.6');
    assert.equal(appStatus(api.last())?.ready, false);
    assert.equal(conditionOf(api.last(), 'Ready')?.status, 'False');
  });

  it('writes the last of two quick changes even when the first is still in flight', async () => {
    const api = new FlakyApi();
    const { m, clock } = manager(api);
    // All within one second: the flip back is identical to the status first written.
    m.setPodStatus(app, fullStatus(undefined, new Date(clock.now())));
    await m.settled();
    let release = (): void => undefined;
    api.gate = new Promise<void>((resolve) => (release = resolve));
    const first = m.setContainerReadiness(key, 'c-app', false);
    await settle();
    assert.equal(api.patches.length, 1, 'the first change is in flight');
    const second = m.setContainerReadiness(key, 'c-app', true);
    release();
    await Promise.all([first, second]);
    assert.equal(appStatus(api.last())?.ready, true, 'the API must end with the newest readiness');
  });

  it('forgets the status it held for a pod', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    m.setPodStatus(app, fullStatus(undefined));
    await m.settled();
    m.forget(key.uid);
    await m.setContainerReadiness(key, 'c-app', false);
    assert.equal(api.patches.length, 1);
  });
});

describe('StatusManager: static pods write through their mirror pods', () => {
  class TargetRecordingApi extends FlakyApi {
    readonly targets: string[] = [];
    override async patchStatus(key: PodKey, body: Record<string, unknown>): Promise<void> {
      await super.patchStatus(key, body);
      this.targets.push(`${key.namespace}/${key.name}/${key.uid}`);
    }
  }

  function staticSetup(): { m: StatusManager; api: TargetRecordingApi; clock: FakeClock; mirror: { uid: string | undefined } } {
    const api = new TargetRecordingApi();
    const clock = createFakeClock();
    const mirror: { uid: string | undefined } = { uid: undefined };
    const m = new StatusManager({
      api,
      clock,
      logger: pino({ level: 'silent' }),
      readiness: new ContainerReadinessStore(),
      retryPeriodMs: 1000,
      statusTarget: (key) => (mirror.uid === undefined ? undefined : { ...key, uid: mirror.uid }),
      isStatic: () => true,
    });
    return { m, api, clock, mirror };
  }

  it('keeps the status pending until the mirror pod exists, writes it there (mirror UID as precondition), and again to a re-created mirror pod', async () => {
    const { m, api, clock, mirror } = staticSetup();
    m.start();
    m.setPodStatus(pod, running);
    await m.settled();
    assert.equal(api.patches.length, 0, 'no mirror pod: nothing written');
    assert.equal(m.pendingCount(), 1);
    mirror.uid = 'm1';
    await clock.advance(1000);
    assert.deepEqual(api.targets, ['ns/web/m1']);
    assert.deepEqual(api.last().metadata, { uid: 'm1' });
    assert.equal(m.pendingCount(), 0);
    m.setPodStatus(pod, running);
    await m.settled();
    assert.equal(api.patches.length, 1, 'the same status to the same mirror pod is not written twice');
    mirror.uid = 'm2';
    m.setPodStatus(pod, running);
    await m.settled();
    assert.deepEqual(api.targets, ['ns/web/m1', 'ns/web/m2'], 'a re-created mirror pod gets the status again');
    await m.stop();
  });

  it('never deletes a static pod through the API', async () => {
    const { m, api, mirror } = staticSetup();
    mirror.uid = 'm1';
    m.setPodStatus(pod, running);
    await m.settled();
    await m.deletePod(pod);
    assert.deepEqual(api.deletes, []);
  });
});
