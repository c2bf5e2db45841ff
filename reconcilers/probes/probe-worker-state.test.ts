import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { targetView } from './probe-worker.js';
import { containerProbes, isInvalidProbeError, probeSettings, type ProbeSettings, type ProbeType } from './probe-spec.js';
import { applyResult, decideTick, INITIAL_WORKER_STATE, type ProbeResult, type ProbeTargetView, type ProbeWorkerState } from './probe-worker-state.js';

function settings(type: ProbeType, overrides: Partial<ProbeSettings> = {}): ProbeSettings {
  return { type, action: { kind: 'exec', command: ['true'] }, initialDelayMs: 0, periodMs: 1000, timeoutMs: 1000, successThreshold: 1, failureThreshold: 3, ...overrides };
}

const running = (overrides: Partial<NonNullable<ProbeTargetView['container']>> = {}): NonNullable<ProbeTargetView['container']> => ({ id: 'c1', state: 'running', startedAtMs: 0, started: true, ...overrides });
const view = (overrides: Partial<ProbeTargetView> = {}): ProbeTargetView => ({ nowMs: 60_000, podTerminal: false, podDeleting: false, container: running(), ...overrides });
const seen: ProbeWorkerState = { containerId: 'c1', lastResult: undefined, resultRun: 0, onHold: false };

describe('probe settings', () => {
  it('applies the API defaults and keeps the probe-level grace period for liveness only', () => {
    const c: V1Container = { name: 'app', livenessProbe: { tcpSocket: { port: 80 }, terminationGracePeriodSeconds: 5 }, readinessProbe: { httpGet: { port: 'http' }, terminationGracePeriodSeconds: 5 } };
    assert.deepEqual(probeSettings(c, 'liveness'), { type: 'liveness', action: { kind: 'tcpSocket', host: '', port: 80 }, initialDelayMs: 0, periodMs: 10_000, timeoutMs: 1000, successThreshold: 1, failureThreshold: 3, terminationGracePeriodSeconds: 5 });
    const readiness = probeSettings(c, 'readiness');
    assert.equal(readiness?.terminationGracePeriodSeconds, undefined);
    assert.deepEqual(readiness?.action, { kind: 'httpGet', scheme: 'HTTP', host: '', port: 'http', path: '/', headers: [] });
    assert.deepEqual(containerProbes(c).map((p) => p.type), ['liveness', 'readiness']);
  });

  it('refuses a probe with no action or two actions', () => {
    assert.throws(() => probeSettings({ name: 'a', readinessProbe: {} }, 'readiness'), (e: unknown) => isInvalidProbeError(e));
    assert.throws(() => probeSettings({ name: 'a', readinessProbe: { exec: { command: ['x'] }, tcpSocket: { port: 1 } } }, 'readiness'), (e: unknown) => isInvalidProbeError(e));
  });
});

describe('probe worker: deciding a tick', () => {
  const cases: { name: string; type: ProbeType; state?: ProbeWorkerState; view: ProbeTargetView; settings?: Partial<ProbeSettings>; want: { kind: string; publish?: ProbeResult } }[] = [
    { name: 'a new container publishes the initial readiness (not ready) and probes', type: 'readiness', state: INITIAL_WORKER_STATE, view: view(), want: { kind: 'probe', publish: 'failure' } },
    { name: 'a new container publishes the initial liveness (success)', type: 'liveness', state: INITIAL_WORKER_STATE, view: view(), want: { kind: 'probe', publish: 'success' } },
    { name: 'a new container publishes startup unknown and probes while not started', type: 'startup', state: INITIAL_WORKER_STATE, view: view({ container: running({ started: false }) }), want: { kind: 'probe', publish: 'unknown' } },
    { name: 'a container running since 10 s+ before the agent started publishes no initial readiness (the kubelet keeps it across its restart)', type: 'readiness', state: INITIAL_WORKER_STATE, view: view({ agentStartedAtMs: 10_001 }), want: { kind: 'probe' } },
    { name: 'nor an initial startup result', type: 'startup', state: INITIAL_WORKER_STATE, view: view({ agentStartedAtMs: 10_001, container: running({ started: false }) }), want: { kind: 'probe' } },
    { name: 'a container started within 10 s of the agent start publishes the initial readiness', type: 'readiness', state: INITIAL_WORKER_STATE, view: view({ agentStartedAtMs: 10_000 }), want: { kind: 'probe', publish: 'failure' } },
    { name: 'no container yet: wait', type: 'readiness', view: view({ container: undefined }), want: { kind: 'skip' } },
    { name: 'the pod is terminal: stop', type: 'readiness', view: view({ podTerminal: true }), want: { kind: 'stop' } },
    { name: 'a waiting container is not ready', type: 'readiness', view: view({ container: running({ state: 'waiting' }) }), want: { kind: 'skip', publish: 'failure' } },
    { name: 'a terminated container that will not restart ends the worker', type: 'liveness', view: view({ container: running({ state: 'terminated', restarts: false }) }), want: { kind: 'stop', publish: 'failure' } },
    { name: 'a terminated container that will restart: wait for the next one', type: 'liveness', view: view({ container: running({ state: 'terminated', restarts: true }) }), want: { kind: 'skip', publish: 'failure' } },
    { name: 'deletion: liveness publishes success and stops (quiet shutdown)', type: 'liveness', view: view({ podDeleting: true }), want: { kind: 'stop', publish: 'success' } },
    { name: 'deletion: readiness keeps probing', type: 'readiness', view: view({ podDeleting: true }), want: { kind: 'probe' } },
    { name: 'within the initial delay: no probe', type: 'readiness', view: view({ nowMs: 4_000 }), settings: { initialDelayMs: 5_000 }, want: { kind: 'skip' } },
    { name: 'past the initial delay: probe', type: 'readiness', view: view({ nowMs: 5_000 }), settings: { initialDelayMs: 5_000 }, want: { kind: 'probe' } },
    { name: 'readiness waits for the startup probe', type: 'readiness', view: view({ container: running({ started: false }) }), want: { kind: 'skip' } },
    { name: 'liveness waits for the startup probe', type: 'liveness', view: view({ container: running({ started: false }) }), want: { kind: 'skip' } },
    { name: 'the startup probe stops probing once started', type: 'startup', view: view(), want: { kind: 'skip' } },
    { name: 'on hold after a liveness failure: no probe of the same container', type: 'liveness', state: { ...seen, onHold: true }, view: view(), want: { kind: 'skip' } },
    { name: 'on hold, a new container resumes probing', type: 'liveness', state: { ...seen, onHold: true }, view: view({ container: running({ id: 'c2' }) }), want: { kind: 'probe', publish: 'success' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const tick = decideTick(settings(c.type, c.settings), c.state ?? seen, c.view);
      assert.equal(tick.kind, c.want.kind);
      assert.equal(tick.publish, c.want.publish);
    });
  }
});

describe('probe worker: thresholds', () => {
  function run(s: ProbeSettings, results: ProbeResult[]): (ProbeResult | undefined)[] {
    let state = seen;
    return results.map((r) => {
      const out = applyResult(s, state, r);
      state = out.state;
      return out.publish;
    });
  }

  it('publishes a failure only after failureThreshold failures in a row', () => {
    assert.deepEqual(run(settings('readiness', { failureThreshold: 3 }), ['failure', 'failure', 'success', 'failure', 'failure', 'failure']), [undefined, undefined, 'success', undefined, undefined, 'failure']);
  });

  it('publishes a success only after successThreshold successes in a row', () => {
    assert.deepEqual(run(settings('readiness', { successThreshold: 2 }), ['success', 'failure', 'success', 'success', 'success']), [undefined, undefined, undefined, 'success', 'success']);
  });

  it('holds after a liveness failure reaches the threshold', () => {
    const s = settings('liveness', { failureThreshold: 2 });
    const first = applyResult(s, seen, 'failure');
    const second = applyResult(s, first.state, 'failure');
    assert.equal(second.publish, 'failure');
    assert.equal(second.state.onHold, true);
    assert.equal(second.state.resultRun, 0);
  });

  it('publishes unknown results at once', () => {
    assert.deepEqual(run(settings('readiness'), ['unknown']), ['unknown']);
  });
});

describe('the worker view of a terminated container in a pod that restarts all its containers in place', () => {
  const rules = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'u' },
    spec: { restartPolicy: 'Never', containers: [{ name: 'app', restartPolicy: 'Never', restartPolicyRules: rules }, { name: 'worker' }] },
  };
  const terminated = (name: string, exitCode: number): V1ContainerStatus => ({ name, image: 'busybox', imageID: '', ready: false, restartCount: 0, containerID: `containerd://c-${name}`, state: { terminated: { exitCode } } });
  const times = { nowMs: 60_000 };

  it('keeps probing a container that runs again because the pod restarts all its containers (the kubelet worker asks ShouldAllContainersRestart)', () => {
    const status: V1PodStatus = { phase: 'Running', containerStatuses: [terminated('app', 42), terminated('worker', 137)] };
    assert.equal(targetView(pod, status, 'app', times).container?.restarts, true, 'the source, by its rule');
    assert.equal(targetView(pod, status, 'worker', times).container?.restarts, true, 'the others, with the pod');
    const notListed: V1PodStatus = { phase: 'Running', containerStatuses: [terminated('app', 1), terminated('worker', 137)] };
    assert.equal(targetView(pod, notListed, 'worker', times).container?.restarts, false, 'a Never container of a pod that does not restart');
  });
});
