import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DEFAULT_EVICTION } from '../eviction/thresholds.js';
import { pino } from 'pino';
import { createFakeClock, settle, type FakeClock } from '../../test/doubles/fake-clock.js';
import { apiError } from '../../test/doubles/fake-kube-api.js';
import type { SettingsTargets } from './apply.js';
import { createNodeAgentController, type NodeAgentController } from './nodeagent-controller.js';
import { createFakeNodeAgentApi, type FakeNodeAgentApi } from '../../test/doubles/fake-nodeagent-api.js';
import type { HealthSample } from './status.js';
import type { NodeAgentCondition } from './types.js';

const ready = { ready: true, reason: '', message: '' };

interface Setup {
  readonly clock: FakeClock;
  readonly api: FakeNodeAgentApi;
  readonly calls: string[];
  readonly sample: { current: HealthSample; fail: boolean };
  readonly controller: NodeAgentController;
}

let running: NodeAgentController | undefined;

function setup(): Setup {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const api = createFakeNodeAgentApi();
  const calls: string[] = [];
  const targets: SettingsTargets = {
    setWorkerConcurrency: (n) => calls.push(`concurrency=${n}`),
    setResyncPeriodSeconds: (s) => calls.push(`resync=${s}`),
    setMaxPods: (n) => calls.push(`maxPods=${n}`),
    setPaused: (p) => calls.push(`paused=${p}`),
    setLogLevel: (l) => calls.push(`logLevel=${l}`),
    setClusterDNS: (servers) => calls.push(`clusterDNS=${servers.join(',')}`),
    setClusterDomain: (d) => calls.push(`clusterDomain=${d}`),
    setGc: (gc) => calls.push(`gc=${gc.maxDeadContainersPerPod}`),
    setLogRotation: (r) => calls.push(`logRotation=${r.containerLogMaxSize}/${r.containerLogMaxFiles}`),
    setCrashLoopBackOff: (c) => calls.push(`crashLoopBackOff=${c.maxContainerRestartPeriodMs}`),
    setImagePulls: (p) => calls.push(`imagePulls=${p.serializeImagePulls}`),
    setReserved: (r) => calls.push(`reserved=${JSON.stringify(r)}`),
    setEviction: (e) => calls.push(`eviction=${JSON.stringify(e.hard)}`),
  };
  const sample = {
    current: { runtime: ready, queue: ready, api: ready, queueCounts: { waiting: 0, active: 1, delayed: 0, failed: 0 }, pods: 2, runtimeVersion: 'containerd://1.6.20', lastRelistMs: clock.now() } as HealthSample,
    fail: false,
  };
  const controller = createNodeAgentController({
    api,
    nodeName: 'vm',
    base: { workerConcurrency: 4, resyncPeriodSeconds: 60, maxPods: 110, logLevel: 'info' },
    targets,
    sample: () => (sample.fail ? Promise.reject(new Error('sample failed')) : Promise.resolve(sample.current)),
    agentVersion: 'v0.1.0-nodelet',
    clock,
    logger: pino({ level: 'silent' }),
    // No jitter: the watch's retries below are at the backoff's own times.
    random: () => 0,
  });
  running = controller;
  return { clock, api, calls, sample, controller };
}

function condition(api: FakeNodeAgentApi, type: string): NodeAgentCondition | undefined {
  return api.objects.get('vm')?.status?.conditions?.find((c) => c.type === type);
}

const writes = (api: FakeNodeAgentApi): number => api.calls.filter((c) => c === 'replaceStatus').length;

async function startAndReport(controller: NodeAgentController): Promise<void> {
  assert.equal(await controller.start(), true);
  controller.startReporting();
  await settle();
}

describe('NodeAgent controller', () => {
  afterEach(async () => {
    await running?.stop();
  });

  it('creates its NodeAgent, applies the flag values, and reports Ready with counts and versions', async () => {
    const { api, calls, controller } = setup();
    await startAndReport(controller);
    assert.deepEqual(calls, ['concurrency=4', 'resync=60', 'maxPods=110', 'paused=false', 'logLevel=info', 'clusterDNS=', 'clusterDomain=cluster.local', 'gc=1', 'logRotation=10Mi/5', 'crashLoopBackOff=300000', 'imagePulls=true', 'reserved={"systemReserved":{},"kubeReserved":{}}', `eviction=${JSON.stringify(DEFAULT_EVICTION.hard)}`]);
    const status = api.objects.get('vm')?.status;
    assert.equal(status?.observedGeneration, 1);
    assert.equal(status?.nodeName, 'vm');
    assert.equal(status?.pods, 2);
    assert.deepEqual(status?.queue, { waiting: 0, active: 1, delayed: 0, failed: 0, depth: 1 });
    assert.equal(status?.runtimeVersion, 'containerd://1.6.20');
    assert.equal(status?.agentVersion, 'v0.1.0-nodelet');
    assert.equal(condition(api, 'Ready')?.status, 'True');
    assert.equal(condition(api, 'SettingsApplied')?.status, 'True');
  });

  it('applies the spec before start resolves, and writes no status until reporting starts', async () => {
    const { api, calls, controller } = setup();
    await api.create({ apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: 'vm' }, spec: { paused: true } });
    assert.equal(await controller.start(), true);
    assert.ok(calls.includes('paused=true'));
    await settle();
    assert.equal(writes(api), 0);
    controller.startReporting();
    await settle();
    assert.equal(writes(api), 1);
  });

  it('gives up waiting for the first spec after 5 s while the API server is down, then applies it when it can', async () => {
    const { api, clock, calls, controller } = setup();
    api.failNext('get', ...Array.from({ length: 3 }, () => new Error('connect ECONNREFUSED')));
    const started = controller.start();
    await clock.advance(5_000);
    assert.equal(await started, false);
    assert.deepEqual(calls, []);
    controller.startReporting();
    await clock.advance(2_000);
    assert.deepEqual(calls, ['concurrency=4', 'resync=60', 'maxPods=110', 'paused=false', 'logLevel=info', 'clusterDNS=', 'clusterDomain=cluster.local', 'gc=1', 'logRotation=10Mi/5', 'crashLoopBackOff=300000', 'imagePulls=true', 'reserved={"systemReserved":{},"kubeReserved":{}}', `eviction=${JSON.stringify(DEFAULT_EVICTION.hard)}`]);
    assert.equal(api.objects.get('vm')?.status?.observedGeneration, 1);
  });

  it('applies a spec change live and reports the new generation without waiting for the heartbeat', async () => {
    const { api, calls, controller } = setup();
    await startAndReport(controller);
    calls.length = 0;
    api.setSpec('vm', { paused: true, workerConcurrency: 8 });
    await settle();
    assert.deepEqual(calls, ['concurrency=8', 'paused=true']);
    assert.equal(controller.settings()?.paused, true);
    assert.equal(api.objects.get('vm')?.status?.observedGeneration, 2);
    assert.match(condition(api, 'Ready')?.message ?? '', /paused/);
  });

  it('reports settings it refused in SettingsApplied and stays Ready; applies log-rotation settings live', async () => {
    const { api, calls, controller } = setup();
    await startAndReport(controller);
    api.setSpec('vm', { maxPods: 5000 });
    await settle();
    assert.equal(condition(api, 'SettingsApplied')?.reason, 'InvalidSettings');
    assert.equal(controller.settings()?.maxPods, 110);
    assert.equal(condition(api, 'Ready')?.status, 'True');
    api.setSpec('vm', { logRotation: { containerLogMaxFiles: 3 } });
    await settle();
    assert.equal(condition(api, 'SettingsApplied')?.status, 'True');
    assert.equal(calls.filter((c) => c.startsWith('logRotation=')).at(-1), 'logRotation=10Mi/3');
  });

  it('writes status every 10 s while nothing changes, and at the next sample when something does', async () => {
    const { api, clock, sample, controller } = setup();
    await startAndReport(controller);
    const first = writes(api);
    await clock.advance(8_000);
    assert.equal(writes(api), first, 'an unchanged status is not written before 10 s');
    await clock.advance(2_000);
    assert.equal(writes(api), first + 1);
    sample.current = { ...sample.current, pods: 3 };
    await clock.advance(2_000);
    assert.equal(writes(api), first + 2);
    assert.equal(api.objects.get('vm')?.status?.pods, 3);
  });

  it('reads the object again and retries once when its status write loses an optimistic-concurrency race', async () => {
    const { api, clock, sample, controller } = setup();
    await startAndReport(controller);
    api.failNext('replaceStatus', apiError(409, 'Conflict'));
    sample.current = { ...sample.current, pods: 7 };
    await clock.advance(2_000);
    assert.deepEqual(api.calls.slice(-3), ['replaceStatus', 'get', 'replaceStatus']);
    assert.equal(api.objects.get('vm')?.status?.pods, 7);
  });

  it('survives an API outage: failed writes and samples back off, and status resumes afterwards', async () => {
    const { api, clock, sample, controller } = setup();
    await startAndReport(controller);
    const down = Array.from({ length: 4 }, () => new Error('connect ECONNREFUSED'));
    api.failNext('replaceStatus', ...down);
    sample.current = { ...sample.current, pods: 9 };
    await clock.advance(2_000); // fails; retries after 1 s, 2 s, 4 s
    await clock.advance(1_000 + 2_000 + 4_000);
    assert.equal(api.objects.get('vm')?.status?.pods, 2);
    sample.fail = true;
    await clock.advance(8_000);
    sample.fail = false;
    await clock.advance(16_000);
    assert.equal(api.objects.get('vm')?.status?.pods, 9);
  });

  it('reports APIReady=False while its own NodeAgent watch is failing', async () => {
    const { api, clock, controller } = setup();
    await startAndReport(controller);
    api.failNext('get', new Error('down'), new Error('down'));
    api.endWatches(new Error('socket hang up'));
    await clock.advance(2_000);
    assert.equal(condition(api, 'APIReady')?.status, 'False');
    assert.equal(condition(api, 'APIReady')?.reason, 'NodeAgentWatchFailing');
    assert.equal(condition(api, 'Ready')?.status, 'False');
    await clock.advance(4_000);
    assert.equal(controller.healthy(), false, 'reads at 1 s and 3 s failed; the next is at 7 s');
    await clock.advance(1_000);
    assert.equal(controller.healthy(), true);
    await clock.advance(2_000);
    assert.equal(condition(api, 'APIReady')?.status, 'True');
  });

  it('reverts to the flag values when a field is removed from the spec', async () => {
    const { api, calls, controller } = setup();
    await startAndReport(controller);
    api.setSpec('vm', { maxPods: 20 });
    await settle();
    api.setSpec('vm', {});
    await settle();
    assert.deepEqual(calls.filter((c) => c.startsWith('maxPods')), ['maxPods=110', 'maxPods=20', 'maxPods=110']);
  });
});
