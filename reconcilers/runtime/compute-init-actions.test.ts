import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { computePodActions } from './compute-pod-actions.js';
import type { ObservedPod } from '../model/observed-pod.js';
import { basePod, container, exited, observation, sandbox } from '../../test/doubles/pod-fixtures.js';

/** A pod with init containers `setup` and `migrate`, a sidecar `proxy` between them, and app containers. */
function podWithInit(mutate?: (pod: V1Pod) => void): V1Pod {
  return basePod((p) => {
    p.spec!.initContainers = [
      { name: 'setup', image: 'busybox:1.35', command: ['true'] },
      { name: 'proxy', image: 'busybox:1.35', command: ['sleep', '3600'], restartPolicy: 'Always' },
      { name: 'migrate', image: 'busybox:1.35', command: ['true'] },
    ];
    mutate?.(p);
  });
}

function initContainer(pod: V1Pod, name: string, overrides: Parameters<typeof container>[2] = {}): ReturnType<typeof container> {
  const spec = pod.spec!.initContainers!.find((c) => c.name === name)!;
  const probe = basePod((p) => (p.spec!.containers = [spec]));
  return container(probe, name, overrides);
}

function plan(pod: V1Pod, observed: ObservedPod): { starts: string[]; kills: string[]; killPod: boolean; initialized: boolean } {
  const actions = computePodActions({ pod, observed, terminating: false });
  return {
    starts: actions.containersToStart.map((s) => `${s.kind}:${s.name}`),
    kills: actions.containersToKill.map((k) => k.name),
    killPod: actions.killPod,
    initialized: actions.initialized,
  };
}

describe('init and sidecar containers in computePodActions', () => {
  const pod = podWithInit();

  it('starts only the first init container with a new sandbox', () => {
    const actions = computePodActions({ pod, observed: observation([], []), terminating: false });
    assert.equal(actions.createSandbox, true);
    assert.deepEqual(actions.containersToStart.map((s) => `${s.kind}:${s.name}`), ['init:setup']);
    assert.equal(actions.initialized, false);
  });

  it('waits while an init container runs', () => {
    assert.deepEqual(plan(pod, observation([sandbox()], [initContainer(pod, 'setup')])), { starts: [], kills: [], killPod: false, initialized: false });
  });

  it('starts the sidecar after the first init container succeeded, and nothing after it yet', () => {
    const p = plan(pod, observation([sandbox()], [initContainer(pod, 'setup', { state: 'CONTAINER_EXITED', exitCode: 0 })]));
    assert.deepEqual(p.starts, ['init:proxy']);
  });

  it('runs the next init container once the sidecar runs', () => {
    const observed = observation([sandbox()], [initContainer(pod, 'setup', { state: 'CONTAINER_EXITED', exitCode: 0 }), initContainer(pod, 'proxy')]);
    assert.deepEqual(plan(pod, observed).starts, ['init:migrate']);
  });

  it('starts the app containers once every init container succeeded, keeping the sidecar', () => {
    const observed = observation([sandbox()], [
      initContainer(pod, 'setup', { state: 'CONTAINER_EXITED', exitCode: 0 }),
      initContainer(pod, 'proxy'),
      initContainer(pod, 'migrate', { state: 'CONTAINER_EXITED', exitCode: 0 }),
    ]);
    const p = plan(pod, observed);
    assert.deepEqual(p.starts, ['regular:app', 'regular:sidecar']);
    assert.equal(p.initialized, true);
  });

  it('restarts a failed init container under restartPolicy Always, before anything after it', () => {
    const observed = observation([sandbox()], [initContainer(pod, 'setup', { state: 'CONTAINER_EXITED', exitCode: 1 })]);
    assert.deepEqual(plan(pod, observed).starts, ['init:setup']);
  });

  it('fails the pod when an init container fails under restartPolicy Never', () => {
    const never = podWithInit((p) => (p.spec!.restartPolicy = 'Never'));
    const observed = observation([sandbox()], [initContainer(never, 'setup', { state: 'CONTAINER_EXITED', exitCode: 1 })]);
    const p = plan(never, observed);
    assert.equal(p.killPod, true);
    assert.deepEqual(p.starts, []);
  });

  it('restarts an exited sidecar of an initialized pod without holding back the app containers', () => {
    const observed = observation([sandbox()], [
      initContainer(pod, 'setup', { state: 'CONTAINER_EXITED', exitCode: 0 }),
      initContainer(pod, 'proxy', { state: 'CONTAINER_EXITED', exitCode: 1 }),
      initContainer(pod, 'migrate', { state: 'CONTAINER_EXITED', exitCode: 0 }),
      container(pod, 'app'),
      exited(pod, 'sidecar', 1),
    ]);
    assert.deepEqual(plan(pod, observed).starts, ['init:proxy', 'regular:sidecar']);
  });

  it('does not keep a Never pod alive for its sidecar once the app containers are done', () => {
    const never = podWithInit((p) => (p.spec!.restartPolicy = 'Never'));
    const observed = observation([sandbox()], [
      initContainer(never, 'setup', { state: 'CONTAINER_EXITED', exitCode: 0 }),
      initContainer(never, 'proxy'),
      initContainer(never, 'migrate', { state: 'CONTAINER_EXITED', exitCode: 0 }),
      exited(never, 'app', 0),
      exited(never, 'sidecar', 0),
    ]);
    assert.equal(plan(never, observed).killPod, true);
  });

  it('counts the pod initialized by an app container of the current sandbox only, as the kubelet 1.37 (the init containers of a new sandbox run again)', () => {
    // The init containers are gone (garbage collected); the app containers ran.
    const inCurrent = observation([sandbox({ id: 'sb-2' }), sandbox({ id: 'sb-1', state: 'SANDBOX_NOTREADY' })], [container(pod, 'app', { sandboxId: 'sb-2' })]);
    assert.equal(plan(pod, inCurrent).initialized, true, 'an app container of the current sandbox: initialized');
    const inPrevious = observation([sandbox({ id: 'sb-2' }), sandbox({ id: 'sb-1', state: 'SANDBOX_NOTREADY' })], [container(pod, 'app', { sandboxId: 'sb-1', state: 'CONTAINER_EXITED', exitCode: 137 })]);
    assert.deepEqual(plan(pod, inPrevious).starts, ['init:setup'], 'only a previous sandbox had app containers: the init containers run again');
  });
});
