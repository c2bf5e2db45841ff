/**
 * The in-place restart of a whole pod, decided as the kubelet's ShouldAllContainersRestart and
 * AllContainersRestartCleanedUp (pkg/kubelet/container/helpers.go, read for semantics), and the
 * restart count a container's log directory gives (calcRestartCountByLogDir).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';
import { restartCountFromLogDir } from './container-logs.js';
import { nextRestartCount } from './observed-pod.js';
import { allContainersCouldRestart, allContainersRestartCleanedUp, exitRestartsAll, restartsAllContainersNow, shouldAllContainersRestart } from './restart-all.js';
import { containerShouldRestart } from './restart-policy.js';

const RESTART_ALL_ON_42 = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];

/** Pod Never; `app` restarts all containers on exit code 42; an init container `setup`. */
const pod = basePod((p) => {
  p.spec!.restartPolicy = 'Never';
  p.spec!.initContainers = [{ name: 'setup', image: 'busybox:1.35' }];
  Object.assign(p.spec!.containers[0]!, { restartPolicy: 'Never', restartPolicyRules: RESTART_ALL_ON_42 });
});
const plain = basePod();

function statusWith(extra: Partial<V1PodStatus>): V1PodStatus {
  return { phase: 'Running', ...extra };
}

describe('the in-place restart of a whole pod: whether it restarts', () => {
  it('only a pod with a RestartAllContainers rule (on an init or a regular container) could', () => {
    assert.equal(allContainersCouldRestart(pod.spec), true);
    assert.equal(allContainersCouldRestart(plain.spec), false);
    const onInit = basePod((p) => (p.spec!.initContainers = [{ name: 'setup', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: RESTART_ALL_ON_42 }]));
    assert.equal(allContainersCouldRestart(onInit.spec), true);
    const restartOnly = basePod((p) => Object.assign(p.spec!.containers[0]!, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] }));
    assert.equal(allContainersCouldRestart(restartOnly.spec), false);
  });

  it('restarts when the newest runtime instance exited with a listed code, not with another, not while it runs', () => {
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], [exited(pod, 'app', 42), container(pod, 'sidecar')]), undefined), true);
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], [exited(pod, 'app', 1), container(pod, 'sidecar')]), undefined), false);
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], [container(pod, 'app'), container(pod, 'sidecar')]), undefined), false);
    // An older instance's exit does not count: the newest one runs.
    const older = exited(pod, 'app', 42, { id: 'c-app-0', createdAt: new Date('2026-01-01T00:00:00Z') });
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], [container(pod, 'app', { restartCount: 1 }), older]), undefined), false);
  });

  it('restarts when the previous status shows the container terminated with a listed code, or the condition True', () => {
    const terminated42 = statusWith({ containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 42 } } }] });
    assert.equal(shouldAllContainersRestart(pod, undefined, terminated42), true);
    const conditionTrue = statusWith({ conditions: [{ type: 'AllContainersRestarting', status: 'True' }] });
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], []), conditionTrue), true);
    const conditionFalse = statusWith({ conditions: [{ type: 'AllContainersRestarting', status: 'False' }] });
    assert.equal(shouldAllContainersRestart(pod, observation([sandbox()], []), conditionFalse), false);
  });

  it('is cleaned up once the runtime has no instance of any init or regular container', () => {
    assert.equal(allContainersRestartCleanedUp(pod, observation([sandbox()], [])), true);
    assert.equal(allContainersRestartCleanedUp(pod, observation([sandbox()], [exited(pod, 'app', 42)])), false);
    const setup = { ...exited(pod, 'app', 0), id: 'c-setup', name: 'setup' };
    assert.equal(allContainersRestartCleanedUp(pod, observation([sandbox()], [setup])), false);
  });

  it('removes now while anything is left (the condition True), and never once it is cleaned up: no loop', () => {
    const exitedSource = observation([sandbox()], [exited(pod, 'app', 42), container(pod, 'sidecar')]);
    assert.equal(restartsAllContainersNow(pod, exitedSource, undefined), true);
    const during = statusWith({ conditions: [{ type: 'AllContainersRestarting', status: 'True' }] });
    assert.equal(restartsAllContainersNow(pod, observation([sandbox()], [container(pod, 'sidecar')]), during), true, 'a removal cut short goes on');
    assert.equal(restartsAllContainersNow(pod, observation([sandbox()], []), during), false, 'nothing left: the restart is done');
    const removed: V1Pod = { ...pod, status: statusWith({ conditions: [{ type: 'AllContainersRestarting', status: 'False' }] }) };
    assert.equal(restartsAllContainersNow(removed, observation([sandbox()], [container(pod, 'app', { id: 'c-app-new' })]), removed.status), false, 'the new instances start without another restart');
    assert.equal(restartsAllContainersNow(plain, observation([sandbox()], [exited(plain, 'app', 42)]), undefined), false, 'a pod without the rule never');
  });

  it('a RestartAllContainers rule matching the exit makes the container run again (ContainerShouldRestart with the gate on)', () => {
    const app = pod.spec!.containers[0]!;
    assert.equal(exitRestartsAll(app, 42), true);
    assert.equal(exitRestartsAll(app, 1), false);
    assert.equal(containerShouldRestart(app, pod.spec, 42), true);
    assert.equal(containerShouldRestart(app, pod.spec, 1), false);
  });
});

describe('the restart count of a container the runtime has no instance of', () => {
  it('is one more than the highest <n>.log of its log directory (rotations too), 0 without one', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-restart-logs-'));
    try {
      assert.equal(await restartCountFromLogDir(path.join(dir, 'missing')), 0);
      const logs = path.join(dir, 'app');
      await mkdir(logs);
      assert.equal(await restartCountFromLogDir(logs), 0);
      await writeFile(path.join(logs, '0.log'), '');
      assert.equal(await restartCountFromLogDir(logs), 1);
      await writeFile(path.join(logs, '2.log.20260101-000000'), '');
      await writeFile(path.join(logs, 'notes.txt'), '');
      await mkdir(path.join(logs, '7.log'));
      assert.equal(await restartCountFromLogDir(logs), 3, 'a rotated 2.log counts; other files and directories do not');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('comes from the log directory only when the runtime has no instance of the container', () => {
    const fromLogs = new Map([['app', 3]]);
    assert.equal(nextRestartCount(observation([sandbox()], []), 'app', fromLogs), 3);
    assert.equal(nextRestartCount(observation([sandbox()], [exited(pod, 'app', 1, { restartCount: 5 })]), 'app', fromLogs), 6);
    assert.equal(nextRestartCount(observation([sandbox()], []), 'app'), 0);
  });
});
