/**
 * The status of a pod restarting all its containers in place, stage by stage, as the kubelet's
 * generateAPIPodStatus reports it (kubelet_pods.go and status/generate.go, read for semantics):
 * the AllContainersRestarting condition, the removed containers' statuses, restart counts, last
 * states and the phase. Each stage's status is generated from the previous stage's, as the
 * status manager hands the last one over.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { hashContainerSpec } from '../model/container-hash.js';
import type { ObservedContainer, ObservedPod } from '../model/observed-pod.js';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';
import { generatePodStatus } from './generate-pod-status.js';

const NOW = new Date('2026-01-01T00:05:00Z');
const RESTART_ALL_ON_42 = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];

/** Pod Never: init `setup`; `app` restarts all containers on 42 (own policy Never); `sidecar` (a regular container). */
const pod = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  p.spec!.initContainers = [{ name: 'setup', image: 'busybox:1.35' }];
  Object.assign(p.spec!.containers[0]!, { restartPolicy: 'Never', restartPolicyRules: RESTART_ALL_ON_42 });
});

function setup(o: Partial<ObservedContainer> = {}): ObservedContainer {
  return container(pod, 'app', { id: 'c-setup', name: 'setup', specHash: hashContainerSpec(pod.spec!.initContainers![0]!), ...o });
}

function generate(observed: ObservedPod, previousStatus: V1PodStatus | undefined, p: V1Pod = pod): V1PodStatus {
  return generatePodStatus({ pod: p, observed, nodeIp: '10.213.0.1', runtimeName: 'containerd', now: NOW, startFailures: new Map(), ...(previousStatus === undefined ? {} : { previousStatus }) });
}

function statusOf(s: V1PodStatus, name: string): V1ContainerStatus | undefined {
  return [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])].find((c) => c.name === name);
}

function restarting(s: V1PodStatus): { status?: string; reason?: string; message?: string } | undefined {
  const c = s.conditions?.find((x) => x.type === 'AllContainersRestarting');
  return c === undefined ? undefined : { status: c.status, ...(c.reason === undefined ? {} : { reason: c.reason }), ...(c.message === undefined ? {} : { message: c.message }) };
}

function conditionStatus(s: V1PodStatus, type: string): string | undefined {
  return s.conditions?.find((c) => c.type === type)?.status;
}

const REMOVED_LAST_STATE = { terminated: { exitCode: 137, reason: 'RestartingAllContainers', message: 'The container is removed because RestartAllContainers in place' } };

describe('the status of a pod restarting all its containers in place', () => {
  const running = generate(observation([sandbox()], [container(pod, 'app'), container(pod, 'sidecar'), setup({ state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' })]), undefined);
  const exitedSource = generate(observation([sandbox()], [exited(pod, 'app', 42), container(pod, 'sidecar'), setup({ state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' })]), running);
  const cleanedUp = generate(observation([sandbox()], []), exitedSource);
  const initAgain = generate(observation([sandbox()], [setup({ id: 'c-setup-1', restartCount: 1 })]), cleanedUp);
  const runningAgain = generate(
    observation([sandbox()], [container(pod, 'app', { id: 'c-app-1', restartCount: 1 }), container(pod, 'sidecar', { id: 'c-sidecar-1', restartCount: 1 }), setup({ id: 'c-setup-1', restartCount: 1, state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' })]),
    initAgain,
  );

  it('while it runs: AllContainersRestarting False, Running', () => {
    assert.deepEqual(restarting(running), { status: 'False' });
    assert.equal(running.phase, 'Running');
  });

  it('a container exits with a listed code: the condition turns True with the kubelet reason and message; still Running', () => {
    assert.deepEqual(restarting(exitedSource), { status: 'True', reason: 'RestartAllContainersStarted', message: 'container exited with restart policy rule' });
    assert.equal(exitedSource.phase, 'Running', 'an exit that restarts all containers is one the container restarts from');
    assert.equal(statusOf(exitedSource, 'app')?.state?.terminated?.exitCode, 42);
  });

  it('every container removed: each waits RestartingAllContainers, its last state the removal (137), its restart count one more; the condition False', () => {
    assert.deepEqual(restarting(cleanedUp), { status: 'False' });
    for (const name of ['setup', 'app', 'sidecar']) {
      const s = statusOf(cleanedUp, name);
      assert.deepEqual(s?.state, { waiting: { reason: 'RestartingAllContainers', message: 'The container is removed because RestartAllContainers in place' } }, name);
      assert.deepEqual(s?.lastState, REMOVED_LAST_STATE, name);
      assert.equal(s?.restartCount, 1, name);
      assert.equal(s?.ready, false, name);
      assert.equal(s?.containerID, undefined, name);
    }
    assert.equal(cleanedUp.phase, 'Running', 'as the kubelet: removed containers count as restarting, not as failed or pending');
    assert.equal(conditionStatus(cleanedUp, 'Initialized'), 'True', 'a pod once initialized is not uninitialized');
  });

  it('the init container runs again: Pending for it, the others waiting PodInitializing with what they counted', () => {
    assert.equal(initAgain.phase, 'Pending');
    assert.deepEqual(restarting(initAgain), { status: 'False' });
    const s = statusOf(initAgain, 'setup');
    assert.ok(s?.state?.running !== undefined);
    assert.equal(s?.restartCount, 1);
    assert.deepEqual(s?.lastState, REMOVED_LAST_STATE);
    for (const name of ['app', 'sidecar']) {
      const c = statusOf(initAgain, name);
      assert.equal(c?.state?.waiting?.reason, 'PodInitializing', name);
      assert.equal(c?.restartCount, 1, name);
      assert.deepEqual(c?.lastState, REMOVED_LAST_STATE, name);
    }
    assert.equal(conditionStatus(initAgain, 'Initialized'), 'True');
  });

  it('running again: every container counted once more, its last state the removal; no second restart (no loop)', () => {
    assert.equal(runningAgain.phase, 'Running');
    assert.deepEqual(restarting(runningAgain), { status: 'False' });
    for (const name of ['setup', 'app', 'sidecar']) {
      assert.equal(statusOf(runningAgain, name)?.restartCount, 1, name);
      assert.deepEqual(statusOf(runningAgain, name)?.lastState, REMOVED_LAST_STATE, name);
    }
    const later = generate(observation([sandbox()], [container(pod, 'app', { id: 'c-app-1', restartCount: 1 }), container(pod, 'sidecar', { id: 'c-sidecar-1', restartCount: 1 }), setup({ id: 'c-setup-1', restartCount: 1, state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' })]), runningAgain);
    assert.deepEqual(restarting(later), { status: 'False' });
    assert.equal(statusOf(later, 'app')?.restartCount, 1, 'stable');
  });

  it('a restart count never goes down, and a new instance shows the termination of the one it replaced', () => {
    // The previous status counted 3; the runtime's new instance (no log to count from) says 0.
    const before = generate(observation([sandbox()], [exited(pod, 'sidecar', 137, { restartCount: 3 }), container(pod, 'app', { restartCount: 3 }), setup({ state: 'CONTAINER_EXITED', exitCode: 0 })]), running);
    const after = generate(observation([sandbox()], [container(pod, 'sidecar', { id: 'c-sidecar-new', restartCount: 0 }), container(pod, 'app', { restartCount: 3 }), setup({ state: 'CONTAINER_EXITED', exitCode: 0 })]), before);
    const sidecar = statusOf(after, 'sidecar');
    assert.equal(sidecar?.restartCount, 4, 'a terminated container running again without a status in between counts one more');
    assert.equal(sidecar?.lastState?.terminated?.exitCode, 137);
    assert.equal(sidecar?.lastState?.terminated?.containerID, 'containerd://c-sidecar');
  });

  it('an exit with a code no rule lists restarts nothing: the condition stays False', () => {
    const notListed = generate(observation([sandbox()], [exited(pod, 'app', 1), container(pod, 'sidecar'), setup({ state: 'CONTAINER_EXITED', exitCode: 0 })]), running);
    assert.deepEqual(restarting(notListed), { status: 'False' });
    assert.equal(statusOf(notListed, 'app')?.state?.terminated?.exitCode, 1);
  });

  it('in a terminal phase the condition is False with PodFailed or PodCompleted', () => {
    const down = [sandbox({ state: 'SANDBOX_NOTREADY' })];
    const failed = generate(observation(down, [exited(pod, 'app', 1), exited(pod, 'sidecar', 0), setup({ state: 'CONTAINER_EXITED', exitCode: 0 })]), running);
    assert.equal(failed.phase, 'Failed');
    assert.deepEqual(restarting(failed), { status: 'False', reason: 'PodFailed' });
    const succeeded = generate(observation(down, [exited(pod, 'app', 0), exited(pod, 'sidecar', 0), setup({ state: 'CONTAINER_EXITED', exitCode: 0 })]), running);
    assert.equal(succeeded.phase, 'Succeeded');
    assert.deepEqual(restarting(succeeded), { status: 'False', reason: 'PodCompleted' });
  });

  it('a pod without a RestartAllContainers rule has no such condition and is reported as before', () => {
    const plain = basePod();
    const s = generate(observation([sandbox()], [container(plain, 'app'), container(plain, 'sidecar')]), undefined, plain);
    assert.equal(restarting(s), undefined);
  });
});
