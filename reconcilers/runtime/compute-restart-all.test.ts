/**
 * The plan of an in-place restart of the whole pod, as the kubelet's computePodActions makes it
 * for a pod marked AllContainersRestarting (getContainersToReset, read for semantics): which
 * instances go, in which order, which are stopped first, and that the sandbox stays.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { hashContainerSpec } from '../model/container-hash.js';
import type { ObservedContainer } from '../model/observed-pod.js';
import { observation, sandbox, UID } from '../../test/doubles/pod-fixtures.js';
import { computePodActions } from './compute-pod-actions.js';
import { containersToReset } from './compute-restart-all.js';

const RESTART_ALL_ON_42 = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];

const busybox = (name: string, more: Partial<V1Container> = {}): V1Container => ({ name, image: 'busybox:1.35', command: ['sh', '-c', 'sleep 3600'], ...more });

/** Init `setup` and sidecar `proxy`; regular `app` (restarts all on 42) and `worker`; an ephemeral `debug`. */
function restartAllPod(mutate?: (pod: V1Pod) => void): V1Pod {
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'default', uid: UID },
    spec: {
      restartPolicy: 'Never',
      initContainers: [busybox('setup'), busybox('proxy', { restartPolicy: 'Always' })],
      containers: [busybox('app', { restartPolicy: 'Never', restartPolicyRules: RESTART_ALL_ON_42 }), busybox('worker')],
      ephemeralContainers: [{ name: 'debug', image: 'busybox:1.35' }],
    },
    status: { phase: 'Running' },
  };
  mutate?.(pod);
  return pod;
}

function instance(pod: V1Pod, name: string, o: Partial<ObservedContainer> = {}): ObservedContainer {
  const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === name);
  return {
    id: `c-${name}`,
    name,
    sandboxId: 'sb-1',
    state: 'CONTAINER_RUNNING',
    restartCount: 0,
    specHash: spec === undefined ? '' : hashContainerSpec(spec),
    image: 'docker.io/library/busybox:1.35',
    imageRef: 'sha256:abc',
    createdAt: new Date('2026-01-01T00:00:10Z'),
    startedAt: new Date('2026-01-01T00:00:11Z'),
    exitCode: 0,
    reason: '',
    message: '',
    annotations: {},
    ...o,
  };
}

const exitedWith = (exitCode: number): Partial<ObservedContainer> => ({ state: 'CONTAINER_EXITED', exitCode, finishedAt: new Date('2026-01-01T00:01:00Z') });

describe('the plan of an in-place restart of the whole pod', () => {
  const pod = restartAllPod();
  // Newest first, as observed: app's newest instance exited 42, an older one 1.
  const observed = observation(
    [sandbox()],
    [
      instance(pod, 'app', { ...exitedWith(42), restartCount: 1 }),
      instance(pod, 'worker'),
      instance(pod, 'proxy'),
      instance(pod, 'setup', exitedWith(0)),
      instance(pod, 'app', { ...exitedWith(1), id: 'c-app-0', createdAt: new Date('2026-01-01T00:00:05Z') }),
      { ...instance(pod, 'debug'), id: 'c-debug' },
    ],
  );

  it('removes every instance of every init and regular container: the others first (regular, then init, each in spec order), the one whose exit started it last', () => {
    const plan = computePodActions({ pod, observed, terminating: false, restartAllContainers: true });
    assert.deepEqual(
      plan.containersToReset.map((r) => [r.id, r.kill]),
      [
        ['c-app-0', false],
        ['c-worker', true],
        ['c-setup', false],
        ['c-proxy', true],
        ['c-app', false],
      ],
    );
    assert.ok(plan.containersToReset.every((r) => r.reason !== ''), 'each with a reason');
  });

  it('keeps the sandbox and starts nothing: the next run starts the pod again', () => {
    const plan = computePodActions({ pod, observed, terminating: false, restartAllContainers: true });
    assert.equal(plan.killPod, false);
    assert.equal(plan.createSandbox, false);
    assert.equal(plan.sandboxId, 'sb-1');
    assert.deepEqual(plan.containersToStart, []);
    assert.deepEqual(plan.containersToKill, [], 'running containers are stopped as part of their removal, not killed apart');
  });

  it('leaves ephemeral containers alone', () => {
    assert.ok(!containersToReset(pod, observed).some((r) => r.name === 'debug'));
  });

  it('puts an init container whose exit started it after everything else', () => {
    const initSource = restartAllPod((p) => {
      p.spec!.initContainers![0] = busybox('setup', { restartPolicy: 'Never', restartPolicyRules: RESTART_ALL_ON_42 });
      p.spec!.containers[0] = busybox('app');
    });
    const resets = containersToReset(initSource, observation([sandbox()], [instance(initSource, 'setup', exitedWith(42)), instance(initSource, 'proxy')]));
    assert.deepEqual(resets.map((r) => [r.name, r.kill]), [['proxy', true], ['setup', false]]);
  });

  it('puts regular sources before init sources', () => {
    const both = restartAllPod((p) => (p.spec!.initContainers![1] = busybox('proxy', { restartPolicy: 'Always', restartPolicyRules: RESTART_ALL_ON_42 })));
    const resets = containersToReset(both, observation([sandbox()], [instance(both, 'app', exitedWith(42)), instance(both, 'proxy', exitedWith(42)), instance(both, 'worker')]));
    assert.deepEqual(resets.map((r) => r.name), ['worker', 'app', 'proxy']);
  });

  it('replaces a sandbox that must change first, removing nothing yet (the kubelet kills the pod instead)', () => {
    const gone = observation([sandbox({ state: 'SANDBOX_NOTREADY' })], [instance(pod, 'app', exitedWith(42)), instance(pod, 'worker', exitedWith(137))]);
    const plan = computePodActions({ pod, observed: gone, terminating: false, restartAllContainers: true });
    assert.equal(plan.killPod, true);
    assert.equal(plan.createSandbox, true);
    assert.equal(plan.sandboxAttempt, 1);
    assert.deepEqual(plan.containersToReset, []);
    assert.deepEqual(plan.containersToStart, []);
  });

  it('a terminating pod is only killed', () => {
    const plan = computePodActions({ pod, observed, terminating: true, restartAllContainers: true });
    assert.equal(plan.killPod, true);
    assert.deepEqual(plan.containersToReset, []);
  });

  it('once every container is gone, starts the first init container with the restart count its log directory gives', () => {
    const empty = observation([sandbox()], []);
    const counted = computePodActions({ pod, observed: empty, terminating: false, logRestartCounts: new Map([['setup', 1], ['app', 2]]) });
    const initAndApp = (plan: typeof counted): [string, number][] => plan.containersToStart.filter((s) => s.kind !== 'ephemeral').map((s) => [s.name, s.restartCount]);
    assert.deepEqual(counted.containersToReset, []);
    assert.deepEqual(initAndApp(counted), [['setup', 1]]);
    const uncounted = computePodActions({ pod, observed: empty, terminating: false });
    assert.deepEqual(initAndApp(uncounted), [['setup', 0]]);
    const initialized = computePodActions({ pod, observed: observation([sandbox()], [instance(pod, 'setup', exitedWith(0)), instance(pod, 'proxy')]), terminating: false, logRestartCounts: new Map([['app', 2]]) });
    assert.deepEqual(initAndApp(initialized), [['app', 2], ['worker', 0]]);
  });
});
