import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { computePodActions } from './compute-pod-actions.js';
import type { PodActions } from './pod-actions.js';
import { hashContainerSpec } from '../model/container-hash.js';
import type { ObservedPod } from '../model/observed-pod.js';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';

interface Case {
  readonly name: string;
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  readonly terminating?: boolean;
  readonly expected: Partial<PodActions>;
  /** Names and restart counts of the containers to start, in order. */
  readonly starts?: readonly [string, number][];
  /** IDs of the containers to kill. */
  readonly kills?: readonly string[];
}

const always = basePod();
const onFailure = basePod((p) => (p.spec!.restartPolicy = 'OnFailure'));
const never = basePod((p) => (p.spec!.restartPolicy = 'Never'));
const changedApp = basePod((p) => (p.spec!.containers[0]!.image = 'busybox:latest'));
const hostNetwork = basePod((p) => (p.spec!.hostNetwork = true));
/** Pod Never; app restarts by its rule on exit code 42 only (the upstream "should restart container on rule match"). */
const ruled = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  Object.assign(p.spec!.containers[0]!, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] });
});
/** Pod Always; app's own policy is Never. */
const appNever = basePod((p) => (p.spec!.containers[0]!.restartPolicy = 'Never'));
/** Pod Never; app's own policy is Always. */
const appAlways = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  p.spec!.containers[0]!.restartPolicy = 'Always';
});
/** Pod Always; app's own policy is OnFailure. */
const appOnFailure = basePod((p) => (p.spec!.containers[0]!.restartPolicy = 'OnFailure'));
const changedNever = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  p.spec!.containers[0]!.image = 'busybox:latest';
});

const cases: Case[] = [
  {
    name: 'a new pod gets a sandbox and every container, in spec order',
    pod: always,
    observed: observation([], []),
    expected: { killPod: false, createSandbox: true, sandboxAttempt: 0 },
    starts: [['app', 0], ['sidecar', 0]],
  },
  {
    name: 'a pod whose containers all run as specified needs nothing',
    pod: always,
    observed: observation([sandbox()], [container(always, 'app'), container(always, 'sidecar')]),
    expected: { killPod: false, createSandbox: false, sandboxId: 'sb-1' },
    starts: [],
    kills: [],
  },
  {
    name: 'an exited container restarts under Always with the next restart count',
    pod: always,
    observed: observation([sandbox()], [exited(always, 'app', 0, { restartCount: 2 }), container(always, 'sidecar')]),
    expected: { killPod: false, createSandbox: false, sandboxId: 'sb-1' },
    starts: [['app', 3]],
  },
  {
    name: 'a container that succeeded does not restart under OnFailure',
    pod: onFailure,
    observed: observation([sandbox()], [exited(onFailure, 'app', 0), container(onFailure, 'sidecar')]),
    expected: { killPod: false },
    starts: [],
  },
  {
    name: 'a container that failed restarts under OnFailure',
    pod: onFailure,
    observed: observation([sandbox()], [exited(onFailure, 'app', 1), container(onFailure, 'sidecar')]),
    expected: { killPod: false },
    starts: [['app', 1]],
  },
  {
    name: 'a pod whose containers all exited under Never is killed (sandbox stopped) and nothing restarts',
    pod: never,
    observed: observation([sandbox()], [exited(never, 'app', 1), exited(never, 'sidecar', 0)]),
    expected: { killPod: true, createSandbox: false },
    starts: [],
  },
  {
    name: 'a pod whose containers all succeeded under OnFailure is killed',
    pod: onFailure,
    observed: observation([sandbox()], [exited(onFailure, 'app', 0), exited(onFailure, 'sidecar', 0)]),
    expected: { killPod: true, createSandbox: false },
    starts: [],
  },
  {
    name: 'a dead sandbox is replaced under Always: kill the pod, new attempt, start every container',
    pod: always,
    observed: observation([sandbox({ state: 'SANDBOX_NOTREADY', attempt: 1 })], [exited(always, 'app', 137, { restartCount: 1 }), exited(always, 'sidecar', 137)]),
    expected: { killPod: true, createSandbox: true, sandboxAttempt: 2 },
    starts: [['app', 2], ['sidecar', 1]],
  },
  {
    name: 'a dead sandbox of a Never pod whose containers ran is not replaced',
    pod: never,
    observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(never, 'app', 0), exited(never, 'sidecar', 0)]),
    expected: { killPod: false, createSandbox: false },
    starts: [],
  },
  {
    name: 'a dead sandbox under OnFailure restarts only the containers that did not succeed',
    pod: onFailure,
    observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(onFailure, 'app', 0), exited(onFailure, 'sidecar', 2)]),
    expected: { killPod: true, createSandbox: true, sandboxAttempt: 1 },
    starts: [['sidecar', 1]],
  },
  {
    name: 'a dead sandbox under OnFailure with every container succeeded is left alone',
    pod: onFailure,
    observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(onFailure, 'app', 0), exited(onFailure, 'sidecar', 0)]),
    expected: { killPod: false, createSandbox: false },
    starts: [],
  },
  {
    name: 'two ready sandboxes are replaced by one',
    pod: always,
    observed: observation([sandbox({ id: 'sb-2', attempt: 1 }), sandbox()], [container(always, 'app'), container(always, 'sidecar')]),
    expected: { killPod: true, createSandbox: true, sandboxAttempt: 2 },
    starts: [['app', 1], ['sidecar', 1]],
  },
  {
    name: 'a pod-network sandbox without an IP is replaced',
    pod: always,
    observed: observation([sandbox({ ip: '' })], [container(always, 'app'), container(always, 'sidecar')]),
    expected: { killPod: true, createSandbox: true },
  },
  {
    name: 'a host-network sandbox without an IP is fine',
    pod: hostNetwork,
    observed: observation([sandbox({ ip: '' })], [container(hostNetwork, 'app'), container(hostNetwork, 'sidecar')]),
    expected: { killPod: false, createSandbox: false },
    starts: [],
  },
  {
    name: 'a running container whose spec changed is killed and started again',
    pod: changedApp,
    observed: observation([sandbox()], [container(always, 'app'), container(changedApp, 'sidecar')]),
    expected: { killPod: false },
    starts: [['app', 1]],
    kills: ['c-app'],
  },
  {
    name: 'a container created but never started is removed from the way and started anew',
    pod: always,
    observed: observation([sandbox()], [container(always, 'app', { state: 'CONTAINER_CREATED' }), container(always, 'sidecar')]),
    expected: { killPod: false },
    starts: [['app', 1]],
    kills: ['c-app'],
  },
  {
    name: 'a running container that is not in the spec is killed',
    pod: always,
    observed: observation([sandbox()], [container(always, 'app'), container(always, 'sidecar'), container(always, 'old', { id: 'c-old' })]),
    expected: { killPod: false },
    starts: [],
    kills: ['c-old'],
  },
  {
    name: 'a second running instance of a container is killed and the newest kept',
    pod: always,
    observed: observation([sandbox()], [
      container(always, 'app', { id: 'c-app-new', restartCount: 1, createdAt: new Date('2026-01-01T00:00:05Z') }),
      container(always, 'app', { id: 'c-app-old' }),
      container(always, 'sidecar'),
    ]),
    expected: { killPod: false },
    starts: [],
    kills: ['c-app-old'],
  },
  {
    name: 'restart rules: an exit code the rule lists restarts the container under pod and container Never',
    pod: ruled,
    observed: observation([sandbox()], [exited(ruled, 'app', 42, { restartCount: 1 }), container(ruled, 'sidecar')]),
    expected: { killPod: false },
    starts: [['app', 2]],
  },
  {
    name: 'restart rules: another exit code falls back to the container policy (Never)',
    pod: ruled,
    observed: observation([sandbox()], [exited(ruled, 'app', 1), container(ruled, 'sidecar')]),
    expected: { killPod: false },
    starts: [],
  },
  {
    name: 'a container restartPolicy Never is not restarted in a pod Always',
    pod: appNever,
    observed: observation([sandbox()], [exited(appNever, 'app', 1), exited(appNever, 'sidecar', 0, { restartCount: 3 })]),
    expected: { killPod: false },
    starts: [['sidecar', 4]],
  },
  {
    name: 'a container restartPolicy Always is restarted in a pod Never, even after success',
    pod: appAlways,
    observed: observation([sandbox()], [exited(appAlways, 'app', 0), exited(appAlways, 'sidecar', 0)]),
    expected: { killPod: false },
    starts: [['app', 1]],
  },
  {
    name: 'a dead sandbox skips a container whose own OnFailure policy saw it succeed',
    pod: appOnFailure,
    observed: observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [exited(appOnFailure, 'app', 0), exited(appOnFailure, 'sidecar', 0)]),
    expected: { killPod: true, createSandbox: true, sandboxAttempt: 1 },
    starts: [['sidecar', 1]],
  },
  {
    name: 'a running container whose spec changed is restarted whatever the policy (Never), as the kubelet',
    pod: changedNever,
    observed: observation([sandbox()], [container(never, 'app'), container(changedNever, 'sidecar')]),
    expected: { killPod: false },
    starts: [['app', 1]],
    kills: ['c-app'],
  },
  {
    name: 'a terminating pod is only killed',
    pod: always,
    observed: observation([sandbox()], [container(always, 'app'), container(always, 'sidecar')]),
    terminating: true,
    expected: { killPod: true, createSandbox: false },
    starts: [],
    kills: [],
  },
  {
    name: 'a terminating pod that has nothing in the runtime is still only killed, never started',
    pod: always,
    observed: observation([], []),
    terminating: true,
    expected: { killPod: true, createSandbox: false },
    starts: [],
  },
];

describe('computePodActions', () => {
  for (const c of cases) {
    it(c.name, () => {
      const plan = computePodActions({ pod: c.pod, observed: c.observed, terminating: c.terminating ?? false });
      for (const [key, value] of Object.entries(c.expected)) {
        assert.deepEqual(plan[key as keyof PodActions], value, `field ${key}`);
      }
      if (c.starts !== undefined) {
        assert.deepEqual(plan.containersToStart.map((s) => [s.name, s.restartCount]), c.starts);
      }
      if (c.kills !== undefined) {
        assert.deepEqual(plan.containersToKill.map((k) => k.id), c.kills);
      }
    });
  }

  it('gives a reason for every kill and every start', () => {
    const plan = computePodActions({ pod: changedApp, observed: observation([sandbox()], [container(always, 'app'), container(changedApp, 'sidecar')]), terminating: false });
    assert.ok(plan.containersToKill.every((k) => k.reason.length > 0));
    assert.ok(plan.containersToStart.every((s) => s.reason.length > 0));
  });
});

describe('computePodActions with probe verdicts', () => {
  const sidecarPod = basePod((p) => {
    p.spec!.initContainers = [{ name: 'proxy', image: 'busybox:1.35', restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } }];
  });
  const running = observation([sandbox()], [container(always, 'app'), container(always, 'sidecar')]);

  it('kills a container whose liveness probe failed and restarts it, with the kubelet event message and the probe grace period', () => {
    const plan = computePodActions({ pod: always, observed: running, terminating: false, probes: { failures: new Map([['c-app', { type: 'liveness', gracePeriodSeconds: 3 }]]), notStarted: new Set() } });
    assert.deepEqual(plan.containersToKill, [{ id: 'c-app', name: 'app', reason: 'failed liveness probe', eventMessage: 'Container app failed liveness probe, will be restarted', gracePeriodSeconds: 3 }]);
    assert.deepEqual(plan.containersToStart.map((s) => [s.name, s.restartCount]), [['app', 1]]);
    assert.equal(plan.killPod, false);
  });

  it('kills a container whose startup probe failed; under Never it is not restarted', () => {
    const pod = basePod((p) => (p.spec!.restartPolicy = 'Never'));
    const plan = computePodActions({ pod, observed: observation([sandbox()], [container(pod, 'app'), container(pod, 'sidecar')]), terminating: false, probes: { failures: new Map([['c-app', { type: 'startup' }]]), notStarted: new Set() } });
    assert.deepEqual(plan.containersToKill, [{ id: 'c-app', name: 'app', reason: 'failed startup probe', eventMessage: 'Container app failed startup probe' }]);
    assert.deepEqual(plan.containersToStart, []);
  });

  it('a liveness kill restarts by the container policy over the pod policy', () => {
    const pod = basePod((p) => {
      p.spec!.restartPolicy = 'Never';
      p.spec!.containers[0]!.restartPolicy = 'OnFailure';
    });
    const plan = computePodActions({ pod, observed: observation([sandbox()], [container(pod, 'app'), container(pod, 'sidecar')]), terminating: false, probes: { failures: new Map([['c-app', { type: 'liveness' }]]), notStarted: new Set() } });
    assert.deepEqual(plan.containersToKill.map((k) => k.eventMessage), ['Container app failed liveness probe, will be restarted']);
    assert.deepEqual(plan.containersToStart.map((s) => s.name), ['app']);
  });

  it('ignores a failure recorded for an older instance of the container', () => {
    const plan = computePodActions({ pod: always, observed: running, terminating: false, probes: { failures: new Map([['c-old', { type: 'liveness' }]]), notStarted: new Set() } });
    assert.deepEqual(plan.containersToKill, []);
    assert.deepEqual(plan.containersToStart, []);
  });

  it('holds the app containers back while a sidecar has not passed its startup probe', () => {
    const proxy = { ...container(sidecarPod, 'app'), id: 'c-proxy', name: 'proxy', specHash: hashOfInit(sidecarPod, 'proxy') };
    const waiting = computePodActions({ pod: sidecarPod, observed: observation([sandbox()], [proxy]), terminating: false, probes: { failures: new Map(), notStarted: new Set(['c-proxy']) } });
    assert.deepEqual(waiting.containersToStart, []);
    assert.equal(waiting.initialized, false);
    const started = computePodActions({ pod: sidecarPod, observed: observation([sandbox()], [proxy]), terminating: false, probes: { failures: new Map(), notStarted: new Set() } });
    assert.deepEqual(started.containersToStart.map((s) => s.name), ['app', 'sidecar']);
  });
});

function hashOfInit(pod: V1Pod, name: string): string {
  const spec = pod.spec?.initContainers?.find((c) => c.name === name);
  if (spec === undefined) throw new Error(`no init container ${name}`);
  return hashContainerSpec(spec);
}
