/**
 * Ephemeral containers in the pure decisions: when `computePodActions` starts one (once, never
 * again, not while terminating), that it never kills one for not being a regular container, that
 * they keep no pod alive, the process namespace they join, and their `ephemeralContainerStatuses`
 * (reported, never counted in the phase or readiness).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { computePodActions } from './compute-pod-actions.js';
import { hashContainerSpec } from '../model/container-hash.js';
import { ephemeralNamespaces } from './ephemeral-containers.js';
import type { ObservedContainer } from '../model/observed-pod.js';
import { generatePodStatus } from '../status/generate-pod-status.js';
import { isContainerStartError } from '../model/sync-errors.js';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';

const plain = basePod();
/** The same pod after `kubectl debug --target=app`: the ephemeral container appended to its spec. */
const debugged = basePod((p) => {
  p.spec!.ephemeralContainers = [{ name: 'debugger', image: 'busybox:1.35', command: ['sh'], stdin: true, tty: true, targetContainerName: 'app' }];
});

/** The app containers, running as created from the spec without the ephemeral container. */
function runningApps(): ObservedContainer[] {
  return [container(plain, 'app'), container(plain, 'sidecar')];
}

function debuggerContainer(overrides: Partial<ObservedContainer> = {}): ObservedContainer {
  return { ...container(debugged, 'debugger'), id: 'c-debugger', createdAt: new Date('2026-01-01T00:01:00Z'), ...overrides };
}

function plan(pod: V1Pod, containers: ObservedContainer[], terminating = false): ReturnType<typeof computePodActions> {
  return computePodActions({ pod, observed: observation([sandbox()], containers), terminating });
}

describe('computePodActions with ephemeral containers', () => {
  it('starts an ephemeral container that has never run, as kind ephemeral with restart count 0, and leaves the running containers alone', () => {
    const p = plan(debugged, runningApps());
    assert.deepEqual(
      p.containersToStart.map((s) => [s.kind, s.index, s.name, s.restartCount]),
      [['ephemeral', 0, 'debugger', 0]],
    );
    assert.deepEqual(p.containersToKill, []);
    assert.equal(p.killPod, false);
    assert.equal(p.createSandbox, false);
  });

  it('appearing in the spec changes no regular container\'s hash: nothing is restarted', () => {
    for (const name of ['app', 'sidecar']) {
      const before = plain.spec!.containers.find((c) => c.name === name)!;
      const after = debugged.spec!.containers.find((c) => c.name === name)!;
      assert.equal(hashContainerSpec(after), hashContainerSpec(before), name);
    }
  });

  it('keeps a running ephemeral container: it is not "a container not in the pod spec"', () => {
    const p = plan(debugged, [debuggerContainer(), ...runningApps()]);
    assert.deepEqual(p.containersToKill, []);
    assert.deepEqual(p.containersToStart, []);
    assert.equal(p.killPod, false);
  });

  it('never restarts an ephemeral container that exited, whatever its exit code or the restart policy', () => {
    for (const exitCode of [0, 3]) {
      const p = plan(debugged, [debuggerContainer({ state: 'CONTAINER_EXITED', exitCode, finishedAt: new Date('2026-01-01T00:02:00Z') }), ...runningApps()]);
      assert.deepEqual(p.containersToStart, [], `exit ${exitCode}`);
      assert.deepEqual(p.containersToKill, [], `exit ${exitCode}`);
      assert.equal(p.killPod, false, `exit ${exitCode}`);
    }
  });

  it('never starts one in a terminating pod: the pod is killed, the running ephemeral container with it', () => {
    const p = plan(debugged, runningApps(), true);
    assert.equal(p.killPod, true);
    assert.deepEqual(p.containersToStart, []);
  });

  it('does not keep a pod alive: every app container exited under Never, a running ephemeral container is killed with the pod', () => {
    const never = basePod((p) => {
      p.spec!.restartPolicy = 'Never';
      p.spec!.ephemeralContainers = debugged.spec!.ephemeralContainers!;
    });
    const p = plan(never, [debuggerContainer(), exited(never, 'app', 0), exited(never, 'sidecar', 0)]);
    assert.equal(p.killPod, true);
    assert.deepEqual(p.containersToStart, []);
  });

  it('starts one before initialization completes (a pod stuck in an init container can be debugged), ahead of the init containers', () => {
    const initPod = basePod((p) => {
      p.spec!.initContainers = [{ name: 'setup', image: 'busybox:1.35' }];
      p.spec!.ephemeralContainers = debugged.spec!.ephemeralContainers!;
    });
    const p = plan(initPod, [{ ...container(initPod, 'setup'), id: 'c-setup', specHash: hashContainerSpec(initPod.spec!.initContainers![0]!) }]);
    assert.equal(p.initialized, false);
    assert.deepEqual(p.containersToStart.map((s) => s.name), ['debugger']);
  });

  it('is not started with a new sandbox (only the pod\'s own containers are)', () => {
    const p = computePodActions({ pod: debugged, observed: observation([], []), terminating: false });
    assert.equal(p.createSandbox, true);
    assert.deepEqual(p.containersToStart.map((s) => s.name), ['app', 'sidecar']);
  });
});

describe('ephemeralNamespaces', () => {
  const podNs = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } as const;
  const spec = debugged.spec!.ephemeralContainers![0]!;
  const observed = observation([sandbox()], [container(plain, 'app', { id: 'c-app-new' }), container(plain, 'app', { id: 'c-app-old', state: 'CONTAINER_EXITED' })]);

  it('joins the newest instance of the target container with TARGET', () => {
    assert.deepEqual(ephemeralNamespaces(spec, podNs, observed), { network: 'POD', pid: 'TARGET', ipc: 'POD', targetId: 'c-app-new' });
  });

  it('keeps the pod\'s namespaces without a target, or when the pod already shares one process namespace', () => {
    assert.deepEqual(ephemeralNamespaces({ ...spec, targetContainerName: undefined }, podNs, observed), podNs);
    assert.deepEqual(ephemeralNamespaces(spec, { ...podNs, pid: 'POD' }, observed), { ...podNs, pid: 'POD' });
  });

  it('a target the runtime does not have is CreateContainerConfigError with the kubelet\'s message', () => {
    assert.throws(
      () => ephemeralNamespaces({ ...spec, targetContainerName: 'nope' }, podNs, observed),
      (e: unknown) => isContainerStartError(e) && e.reason === 'CreateContainerConfigError' && e.message === 'unable to find target container nope',
    );
  });
});

describe('generatePodStatus with ephemeral containers', () => {
  const now = new Date('2026-01-01T00:05:00Z');
  function status(containers: ObservedContainer[], failures = new Map<string, { reason: string; message: string }>()): ReturnType<typeof generatePodStatus> {
    return generatePodStatus({ pod: debugged, observed: observation([sandbox()], containers), nodeIp: '10.213.0.1', runtimeName: 'containerd', now, startFailures: failures });
  }
  const ready = (conditions: V1PodCondition[] | undefined): string | undefined => conditions?.find((c) => c.type === 'Ready')?.status;

  it('reports one not started yet as waiting ContainerCreating, never ready, without started', () => {
    const s = status(runningApps());
    assert.deepEqual(s.ephemeralContainerStatuses, [{ name: 'debugger', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, ready: false, restartCount: 0, image: 'busybox:1.35', imageID: '' }]);
    assert.deepEqual(s.containerStatuses?.map((c) => c.name), ['app', 'sidecar']);
  });

  it('reports a start failure as waiting with its reason', () => {
    const s = status(runningApps(), new Map([['debugger', { reason: 'ErrImagePull', message: 'not found' }]]));
    assert.deepEqual(s.ephemeralContainerStatuses?.[0]?.state, { waiting: { reason: 'ErrImagePull', message: 'not found' } });
  });

  it('reports it running, then terminated with its exit code; the pod stays Running and Ready throughout', () => {
    const running = status([debuggerContainer(), ...runningApps()]);
    assert.deepEqual(running.ephemeralContainerStatuses?.[0]?.state, { running: { startedAt: new Date('2026-01-01T00:00:02Z') } });
    assert.equal(running.ephemeralContainerStatuses?.[0]?.containerID, 'containerd://c-debugger');
    assert.equal(running.ephemeralContainerStatuses?.[0]?.ready, false);
    const finishedAt = new Date('2026-01-01T00:03:00Z');
    const done = status([debuggerContainer({ state: 'CONTAINER_EXITED', exitCode: 3, finishedAt }), ...runningApps()]);
    assert.deepEqual(done.ephemeralContainerStatuses?.[0]?.state, {
      terminated: { exitCode: 3, reason: 'Error', startedAt: new Date('2026-01-01T00:00:02Z'), finishedAt, containerID: 'containerd://c-debugger' },
    });
    for (const s of [running, done]) {
      assert.equal(s.phase, 'Running');
      assert.equal(ready(s.conditions), 'True');
    }
  });

  it('a pod without ephemeral containers has no ephemeralContainerStatuses field', () => {
    const s = generatePodStatus({ pod: plain, observed: observation([sandbox()], runningApps()), nodeIp: '10.213.0.1', runtimeName: 'containerd', now, startFailures: new Map() });
    assert.equal('ephemeralContainerStatuses' in s, false);
  });
});
