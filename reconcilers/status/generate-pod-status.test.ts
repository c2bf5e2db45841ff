import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { generatePodStatus, type GeneratePodStatusInput } from './generate-pod-status.js';
import type { ObservedPod } from '../model/observed-pod.js';
import { hashContainerSpec } from '../model/container-hash.js';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';

const NOW = new Date('2026-01-01T00:05:00Z');
const EARLIER = new Date('2026-01-01T00:00:00Z');

function status(pod: V1Pod, observed: ObservedPod, extra: Partial<GeneratePodStatusInput> = {}): V1PodStatus {
  return generatePodStatus({ pod, observed, nodeIp: '10.213.0.1', runtimeName: 'containerd', now: NOW, startFailures: new Map(), ...extra });
}

function conditionStatus(s: V1PodStatus, type: string): string | undefined {
  return s.conditions?.find((c) => c.type === type)?.status;
}

const always = basePod();
const never = basePod((p) => (p.spec!.restartPolicy = 'Never'));
const onFailure = basePod((p) => (p.spec!.restartPolicy = 'OnFailure'));
const running = observation([sandbox()], [container(always, 'app'), container(always, 'sidecar')]);
/** Pod Never; app restarts by its rule on exit code 42 only. */
const ruled = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  Object.assign(p.spec!.containers[0]!, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] });
});
/** Pod Always; both containers' own policy is Never. */
const bothNever = basePod((p) => { p.spec!.containers.forEach((c) => (c.restartPolicy = 'Never')); });
/** Pod Never with an init container whose own policy is OnFailure (or none, with `own` undefined). */
const initPod = (own?: string): V1Pod =>
  basePod((p) => {
    p.spec!.restartPolicy = 'Never';
    p.spec!.initContainers = [{ name: 'setup', image: 'busybox:1.35', ...(own === undefined ? {} : { restartPolicy: own }) }];
  });
const failedInit = (pod: V1Pod): ObservedPod => observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [{ ...exited(pod, 'app', 1), id: 'c-setup', name: 'setup', specHash: hashContainerSpec(pod.spec!.initContainers![0]!) }]);

describe('generatePodStatus: phase', () => {
  const cases: { name: string; pod: V1Pod; observed: ObservedPod; phase: string; extra?: Partial<GeneratePodStatusInput> }[] = [
    { name: 'a pod with nothing created yet is Pending', pod: always, observed: observation([], []), phase: 'Pending' },
    { name: 'a pod whose containers all run is Running', pod: always, observed: running, phase: 'Running' },
    { name: 'a pod with one container still being created is Pending', pod: always, observed: observation([sandbox()], [container(always, 'app')]), phase: 'Pending' },
    {
      name: 'a Never pod whose containers all exited 0 is Succeeded once the sandbox is down',
      pod: never,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(never, 'app', 0), exited(never, 'sidecar', 0)]),
      phase: 'Succeeded',
    },
    {
      name: 'a Never pod with a failed container is Failed once the sandbox is down',
      pod: never,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(never, 'app', 1), exited(never, 'sidecar', 0)]),
      phase: 'Failed',
    },
    {
      name: 'a Never pod whose containers exited is not reported terminal while its sandbox still runs',
      pod: never,
      observed: observation([sandbox()], [exited(never, 'app', 0), exited(never, 'sidecar', 0)]),
      phase: 'Pending',
    },
    {
      name: 'an Always pod whose containers exited is Running (they restart)',
      pod: always,
      observed: observation([sandbox()], [exited(always, 'app', 1), exited(always, 'sidecar', 0)]),
      phase: 'Running',
    },
    {
      name: 'an OnFailure pod with a failed container is Running (it restarts)',
      pod: onFailure,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(onFailure, 'app', 1), exited(onFailure, 'sidecar', 0)]),
      phase: 'Running',
    },
    {
      name: 'restart rules: a Never pod whose container exited with a code its rule restarts is Running',
      pod: ruled,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(ruled, 'app', 42), exited(ruled, 'sidecar', 0)]),
      phase: 'Running',
    },
    {
      name: 'restart rules: the same pod with another exit code is Failed',
      pod: ruled,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(ruled, 'app', 1), exited(ruled, 'sidecar', 0)]),
      phase: 'Failed',
    },
    {
      name: 'an Always pod whose containers are all restartPolicy Never and exited 0 is Succeeded',
      pod: bothNever,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(bothNever, 'app', 0), exited(bothNever, 'sidecar', 0)]),
      phase: 'Succeeded',
    },
    { name: 'a Never pod whose failed init container has its own OnFailure policy is Pending (it restarts)', pod: initPod('OnFailure'), observed: failedInit(initPod('OnFailure')), phase: 'Pending' },
    { name: 'a Never pod whose failed init container has no policy of its own is Failed', pod: initPod(), observed: failedInit(initPod()), phase: 'Failed' },
    {
      name: 'a deleted Always pod whose containers were stopped is Failed (podIsTerminal)',
      pod: always,
      observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(always, 'app', 137), exited(always, 'sidecar', 143)]),
      extra: { podIsTerminal: true },
      phase: 'Failed',
    },
    {
      name: 'a deleted pod whose containers never started is Failed, its containers ContainerStatusUnknown',
      pod: always,
      observed: observation([], []),
      extra: { podIsTerminal: true },
      phase: 'Failed',
    },
    {
      name: 'a terminal phase already in the API is never left',
      pod: basePod((p) => (p.status = { phase: 'Succeeded' })),
      observed: observation([], []),
      phase: 'Succeeded',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(status(c.pod, c.observed, c.extra).phase, c.phase);
    });
  }
});

describe('generatePodStatus: a deleted pod whose containers are removed', () => {
  it('keeps the terminated status the API shows (exit code, finishedAt) instead of ContainerStatusUnknown', () => {
    const finishedAt = new Date('2026-01-01T00:04:00Z');
    const terminated = { exitCode: 137, reason: 'Error', startedAt: EARLIER, finishedAt, containerID: 'containerd://c1' };
    const pod = basePod((p) => {
      p.status = { phase: 'Failed', containerStatuses: [{ name: 'app', state: { terminated }, ready: false, restartCount: 2, image: 'img', imageID: 'sha256:x', containerID: 'containerd://c1' }] };
    });
    const s = status(pod, observation([], []), { podIsTerminal: true });
    const app = s.containerStatuses?.find((c) => c.name === 'app');
    assert.deepEqual(app?.state, { terminated });
    assert.equal(app?.restartCount, 2);
    assert.equal(app?.ready, false);
    const sidecar = s.containerStatuses?.find((c) => c.name === 'sidecar');
    assert.equal(sidecar?.state?.terminated?.reason, 'ContainerStatusUnknown', 'a container with no terminated status to keep is still unknown');
  });
});

describe('generatePodStatus: conditions', () => {
  it('reports every condition True for a running pod', () => {
    const s = status(always, running);
    for (const type of ['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']) {
      assert.equal(conditionStatus(s, type), 'True', type);
    }
  });

  it('names the unready containers while one is still being created', () => {
    const s = status(always, observation([sandbox()], [container(always, 'app')]));
    const ready = s.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'ContainersNotReady');
    assert.equal(ready?.message, 'containers with unready status: [sidecar]');
  });

  it('keeps lastTransitionTime when a condition does not change and moves it when it does', () => {
    const pod = basePod((p) => {
      p.status = {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: EARLIER },
          { type: 'ContainersReady', status: 'False', lastTransitionTime: EARLIER },
        ],
      };
    });
    const s = status(pod, running);
    assert.deepEqual(s.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime, EARLIER);
    assert.deepEqual(s.conditions?.find((c) => c.type === 'ContainersReady')?.lastTransitionTime, NOW);
  });

  it('keeps conditions it does not own, such as PodScheduled', () => {
    const pod = basePod((p) => (p.status = { conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER }] }));
    assert.equal(conditionStatus(status(pod, running), 'PodScheduled'), 'True');
  });

  it('holds Ready False until every readiness gate is True', () => {
    const gated = basePod((p) => {
      p.spec!.readinessGates = [{ conditionType: 'example.com/lb' }];
      p.status = { conditions: [{ type: 'example.com/lb', status: 'False' }] };
    });
    const s = status(gated, running);
    assert.equal(conditionStatus(s, 'ContainersReady'), 'True');
    assert.equal(conditionStatus(s, 'Ready'), 'False');
    assert.equal(s.conditions?.find((c) => c.type === 'Ready')?.reason, 'ReadinessGatesNotReady');
  });

  it('reports PodReadyToStartContainers False with the kubelet 1.37 reason and message for each sandbox that cannot be used', () => {
    const readyToStart = (observed: ObservedPod): object | undefined => {
      const c = status(always, observed).conditions?.find((x) => x.type === 'PodReadyToStartContainers');
      return c === undefined ? undefined : { status: c.status, reason: c.reason, message: c.message };
    };
    const notReady = (message: string): object => ({ status: 'False', reason: 'PodSandboxNotReady', message });
    assert.deepEqual(readyToStart(observation([], [])), notReady('no pod sandbox exists'));
    assert.deepEqual(readyToStart(observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [])), notReady('pod sandbox is not ready'));
    assert.deepEqual(readyToStart(observation([sandbox({ id: 'b' }), sandbox({ id: 'a' })], [])), notReady('multiple pod sandboxes are ready and need to be reconciled'));
    assert.deepEqual(readyToStart(observation([sandbox({ ip: '' })], [])), notReady('pod sandbox has no IP address'));
    assert.deepEqual(readyToStart(running), { status: 'True', reason: undefined, message: undefined });
  });

  it('reports a running container not ready when its readiness probe says so, and ready without a result', () => {
    const s = status(always, running, { probeResults: new Map([['c-app', { ready: false }]]) });
    assert.equal(s.containerStatuses?.find((c) => c.name === 'app')?.ready, false);
    assert.equal(s.containerStatuses?.find((c) => c.name === 'app')?.started, true);
    assert.equal(s.containerStatuses?.find((c) => c.name === 'sidecar')?.ready, true);
    assert.equal(conditionStatus(s, 'ContainersReady'), 'False');
    assert.equal(s.conditions?.find((c) => c.type === 'Ready')?.message, 'containers with unready status: [app]');
  });

  it('keeps a Ready pod ready across an agent restart until the readiness probe of a container found running reports (the kubelet restart grace)', () => {
    const probed = (ready: 'True' | 'False'): V1Pod => basePod((p) => {
      p.spec!.containers[0]!.readinessProbe = { exec: { command: ['true'] } };
      p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: ready }] };
    });
    const app = (pod: V1Pod, extra: Partial<GeneratePodStatusInput>): boolean | undefined => status(pod, running, extra).containerStatuses?.find((c) => c.name === 'app')?.ready;
    // The containers started at 00:00:02; the agent at 00:00:12.001 (found them running) or 00:00:12 (within the grace).
    const restarted = Date.parse('2026-01-01T00:00:12.001Z');
    assert.equal(app(probed('True'), { agentStartedAtMs: restarted }), true, 'found running, pod Ready, no result yet: kept ready');
    assert.equal(conditionStatus(status(probed('True'), running, { agentStartedAtMs: restarted }), 'Ready'), 'True');
    assert.equal(app(probed('False'), { agentStartedAtMs: restarted }), false, 'the pod was not Ready: not ready until probed');
    assert.equal(app(probed('True'), { agentStartedAtMs: Date.parse('2026-01-01T00:00:12Z') }), false, 'started within 10 s of the agent: not ready until probed');
    assert.equal(app(probed('True'), {}), false, 'no agent start given: not ready until probed');
    assert.equal(app(probed('True'), { agentStartedAtMs: restarted, probeResults: new Map([['c-app', { ready: false }]]) }), false, 'a probe result decides');
  });

  it('reports a running container neither started nor ready until its startup probe succeeds', () => {
    const app = status(always, running, { probeResults: new Map([['c-app', { started: false }]]) }).containerStatuses?.find((c) => c.name === 'app');
    assert.equal(app?.started, false);
    assert.equal(app?.ready, false);
  });

  it('marks a completed pod not ready with reason PodCompleted', () => {
    const s = status(never, observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(never, 'app', 0), exited(never, 'sidecar', 0)]));
    assert.equal(s.conditions?.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
  });
});

describe('generatePodStatus: containers and addresses', () => {
  it('reports running containers with containerID, imageID and startedAt', () => {
    const s = status(always, running);
    const app = s.containerStatuses?.find((c) => c.name === 'app');
    assert.equal(app?.ready, true);
    assert.equal(app?.started, true);
    assert.equal(app?.containerID, 'containerd://c-app');
    assert.equal(app?.imageID, 'sha256:abc');
    assert.deepEqual(app?.state?.running?.startedAt, new Date('2026-01-01T00:00:02Z'));
  });

  it("reports the first process's user when the runtime does (containerd 2), and none when it does not", () => {
    const user = { uid: 1000n, gid: 3000n, supplementalGroups: [3000n, 4000n] };
    const s = status(always, observation([sandbox()], [container(always, 'app', { user }), container(always, 'sidecar')]));
    assert.deepEqual(s.containerStatuses?.find((c) => c.name === 'app')?.user, { linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 4000] } });
    assert.equal(s.containerStatuses?.find((c) => c.name === 'sidecar')?.user, undefined);
  });

  it('shows a start failure as the waiting reason, with the previous exit as lastState', () => {
    const observed = observation([sandbox()], [exited(always, 'app', 1, { restartCount: 3 }), container(always, 'sidecar')]);
    const s = status(always, observed, { startFailures: new Map([['app', { reason: 'ErrImagePull', message: 'pull failed' }]]) });
    const app = s.containerStatuses?.find((c) => c.name === 'app');
    assert.equal(app?.state?.waiting?.reason, 'ErrImagePull');
    assert.equal(app?.state?.waiting?.message, 'pull failed');
    assert.equal(app?.lastState?.terminated?.exitCode, 1);
    assert.equal(app?.restartCount, 3);
  });

  it('shows ContainerCreating for a container not created yet', () => {
    const s = status(always, observation([sandbox()], []));
    assert.equal(s.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
  });

  it('shows the previous instance of a restarted container as lastState', () => {
    const observed = observation([sandbox()], [
      container(always, 'app', { id: 'c-app-2', restartCount: 1, createdAt: new Date('2026-01-01T00:02:00Z') }),
      exited(always, 'app', 2, { id: 'c-app-1' }),
      container(always, 'sidecar'),
    ]);
    const app = status(always, observed).containerStatuses?.find((c) => c.name === 'app');
    assert.equal(app?.restartCount, 1);
    assert.equal(app?.lastState?.terminated?.exitCode, 2);
    assert.equal(app?.lastState?.terminated?.containerID, 'containerd://c-app-1');
  });

  it('reports the node IP as hostIP and the sandbox IP as podIP', () => {
    const s = status(always, running);
    assert.equal(s.hostIP, '10.213.0.1');
    assert.deepEqual(s.hostIPs, [{ ip: '10.213.0.1' }]);
    assert.equal(s.podIP, '10.214.0.5');
    assert.deepEqual(s.podIPs, [{ ip: '10.214.0.5' }]);
  });

  it('keeps the previous podIP once the sandbox is gone', () => {
    const pod = basePod((p) => (p.status = { podIP: '10.214.0.9', podIPs: [{ ip: '10.214.0.9' }] }));
    assert.equal(status(pod, observation([], [])).podIP, '10.214.0.9');
  });

  it('uses the node IP as the podIP of a host-network pod', () => {
    const pod = basePod((p) => (p.spec!.hostNetwork = true));
    assert.equal(status(pod, observation([sandbox({ ip: '' })], [])).podIP, '10.213.0.1');
  });

  it('sets startTime once and keeps it', () => {
    assert.deepEqual(status(always, running).startTime, NOW);
    const started = basePod((p) => (p.status = { startTime: EARLIER }));
    assert.deepEqual(status(started, running).startTime, EARLIER);
  });

  it('computes the QoS class when the API has none', () => {
    const guaranteed = basePod((p) => {
      for (const c of p.spec!.containers) c.resources = { limits: { cpu: '100m', memory: '64Mi' } };
    });
    assert.equal(status(guaranteed, running).qosClass, 'Guaranteed');
    assert.equal(status(always, running).qosClass, 'BestEffort');
  });
});

describe('generatePodStatus: PodScheduled, as the kubelet adds it', () => {
  it('adds PodScheduled True to a pod no scheduler saw (bound by spec.nodeName), and keeps the scheduler\'s as it is', () => {
    const unscheduled = status(always, running);
    assert.deepEqual(unscheduled.conditions?.filter((c) => c.type === 'PodScheduled'), [{ type: 'PodScheduled', status: 'True', lastTransitionTime: NOW }]);
    const scheduled = basePod((p) => { p.status = { conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER }] }; });
    assert.deepEqual(status(scheduled, running).conditions?.filter((c) => c.type === 'PodScheduled'), [{ type: 'PodScheduled', status: 'True', lastTransitionTime: EARLIER }]);
  });
});

describe('generatePodStatus: a pod with a sidecar (restartable init container) once its app containers finished', () => {
  /** Pod `policy` with a sidecar `side` and the app container `app` only. */
  const withSidecar = (policy: string): V1Pod =>
    basePod((p) => {
      p.spec!.restartPolicy = policy;
      p.spec!.containers = [p.spec!.containers[0]!];
      p.spec!.initContainers = [{ name: 'side', image: 'busybox:1.35', restartPolicy: 'Always' }];
    });
  const sideOf = (pod: V1Pod, exitCode: number): ObservedPod['containers'][number] => ({ ...exited(pod, 'app', exitCode), id: 'c-side', name: 'side', specHash: hashContainerSpec(pod.spec!.initContainers![0]!), createdAt: new Date('2026-01-01T00:00:00Z') });
  const done = (pod: V1Pod, appExit: number): ObservedPod => observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [sideOf(pod, 137), exited(pod, 'app', appExit)]);

  it('is Succeeded with Initialized True (PodCompleted) when the app succeeded, its sidecar stopped and its sandbox is gone, as the kubelet', () => {
    const pod = withSidecar('Never');
    const s = status({ ...pod, status: { phase: 'Running' } }, done(pod, 0));
    assert.equal(s.phase, 'Succeeded');
    assert.deepEqual(s.conditions?.find((c) => c.type === 'Initialized'), { type: 'Initialized', status: 'True', reason: 'PodCompleted', lastTransitionTime: NOW });
  });

  it('is Failed when the app failed', () => {
    const pod = withSidecar('Never');
    const s = status({ ...pod, status: { phase: 'Running' } }, done(pod, 1));
    assert.equal(s.phase, 'Failed');
    assert.equal(conditionStatus(s, 'Initialized'), 'True');
  });

  it('stays Running, Initialized, while the sidecar restarts beside a running app container', () => {
    const pod = withSidecar('Always');
    const observed = observation([sandbox()], [sideOf(pod, 1), container(pod, 'app')]);
    const s = status({ ...pod, status: { phase: 'Running' } }, observed);
    assert.equal(s.phase, 'Running');
    assert.equal(conditionStatus(s, 'Initialized'), 'True');
  });

  it('is Failed when a regular init container after the sidecar failed under restartPolicy Never, once the sidecar stopped and the sandbox is down', () => {
    const pod = basePod((p) => {
      p.spec!.restartPolicy = 'Never';
      p.spec!.containers = [p.spec!.containers[0]!];
      p.spec!.initContainers = [{ name: 'side', image: 'busybox:1.35', restartPolicy: 'Always' }, { name: 'init1', image: 'busybox:1.35' }];
    });
    const init1 = { ...exited(pod, 'app', 1), id: 'c-init1', name: 'init1', specHash: hashContainerSpec(pod.spec!.initContainers![1]!) };
    const observed = observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [sideOf(pod, 1), init1]);
    assert.equal(status({ ...pod, status: { phase: 'Pending' } }, observed).phase, 'Failed');
    const onFailure: V1Pod = { ...pod, spec: { ...pod.spec!, restartPolicy: 'OnFailure' } };
    assert.equal(status({ ...onFailure, status: { phase: 'Pending' } }, observed).phase, 'Pending', 'an init container that restarts does not fail the pod');
  });

  it('is still Pending while a regular init container has not run, with or without a sandbox', () => {
    const pod = initPod();
    for (const sandboxes of [[], [sandbox()], [sandbox({ state: 'SANDBOX_NOTREADY' })]]) {
      const s = status(pod, observation(sandboxes, []));
      assert.equal(s.phase, 'Pending');
      assert.equal(conditionStatus(s, 'Initialized'), 'False');
    }
  });
});
