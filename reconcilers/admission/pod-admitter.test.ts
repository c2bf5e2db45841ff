/**
 * The admitter's bookkeeping on plain data, as the kubelet's HandlePodAdditions: pods admitted in
 * creation order whichever is asked about first, each against the admitted pods not yet
 * terminated; decisions that never change; one event per rejection; no decision without a node.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { admitHandlers } from './index.js';
import { APPARMOR_NOT_ENABLED } from './apparmor.js';
import { PodAdmitter, type AdmitDecision } from './pod-admitter.js';
import type { Preemption } from './admit.js';

const node: V1Node = { metadata: { name: 'node-a', labels: { 'kubernetes.io/os': 'linux' } }, status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110' } } };

function cpuPod(name: string, cpu: string, createdSecond: number, extra: { hostPort?: number; phase?: string } = {}): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, createdSecond)) },
    spec: { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu } }, ...(extra.hostPort === undefined ? {} : { ports: [{ containerPort: 80, hostPort: extra.hostPort }] }) }] },
    ...(extra.phase === undefined ? {} : { status: { phase: extra.phase } }),
  };
}

function setup(pods: V1Pod[], nodeObject: { value: V1Node | undefined } = { value: node }): { admitter: PodAdmitter; events: RecordingEventRecorder; preempted: string[][] } {
  const events = new RecordingEventRecorder();
  const preempted: string[][] = [];
  const handlers = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED } });
  const preempt = (preemption: Preemption, by: V1Pod): void => {
    preempted.push([by.metadata?.name ?? '', preemption.resource, ...preemption.victims.map((v) => v.metadata?.name ?? '')]);
  };
  return { admitter: new PodAdmitter({ handlers, events, node: () => nodeObject.value, pods: () => pods, preempt }), events, preempted };
}

function critical(pod: V1Pod): V1Pod {
  return { ...pod, spec: { ...pod.spec, containers: pod.spec?.containers ?? [], priority: 2_000_001_000, priorityClassName: 'system-node-critical' } };
}

const kind = (d: AdmitDecision): string => (d.kind === 'rejected' ? `rejected ${d.rejection.reason}` : d.kind);

describe('PodAdmitter', () => {
  it('counts what admitted pods request: the pod that no longer fits is rejected with the used amount', () => {
    const a = cpuPod('a', '1500m', 1);
    const b = cpuPod('b', '1', 2);
    const { admitter, events } = setup([a, b]);
    assert.equal(kind(admitter.admit(a)), 'admitted');
    const decision = admitter.admit(b);
    assert.deepEqual(decision, { kind: 'rejected', rejection: { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000" } });
    assert.deepEqual(events.events.map((e) => [e.podUid, e.type, e.reason]), [['uid-b', 'Warning', 'OutOfcpu']]);
  });

  it('admits a critical pod that does not fit by preempting, and frees the victims\' room for later decisions', () => {
    const big = cpuPod('big', '1500m', 1);
    const small = cpuPod('small', '300m', 2);
    const node1 = critical(cpuPod('node-critical', '1', 3));
    const { admitter, preempted, events } = setup([big, small, node1]);
    assert.equal(kind(admitter.admit(big)), 'admitted');
    assert.equal(kind(admitter.admit(small)), 'admitted');
    // 800m missing: big (1500m) comes closest; small (300m) alone would not do.
    assert.equal(kind(admitter.admit(node1)), 'admitted');
    assert.deepEqual(preempted, [['node-critical', 'cpu', 'big']]);
    assert.deepEqual(admitter.activePods().map((p) => p.metadata?.name).sort(), ['node-critical', 'small']);
    assert.deepEqual(events.reasons(), [], 'the critical pod is not rejected');
  });

  it("rejects a critical pod with the kubelet's UnexpectedAdmissionError when no pods it may preempt free enough", () => {
    const other = critical(cpuPod('other-critical', '1800m', 1));
    const node1 = critical(cpuPod('node-critical', '1', 2));
    const { admitter, preempted } = setup([other, node1]);
    assert.equal(kind(admitter.admit(other)), 'admitted');
    const decision = admitter.admit(node1);
    assert.deepEqual(decision, {
      kind: 'rejected',
      rejection: { admit: false, reason: 'UnexpectedAdmissionError', message: 'Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 800), ]' },
    });
    assert.deepEqual(preempted, []);
  });

  it('admits in creation order whichever pod is asked about first', () => {
    const older = cpuPod('older', '1500m', 1);
    const newer = cpuPod('newer', '1500m', 2);
    const { admitter, events } = setup([newer, older]);
    // The newer pod's reconcile runs first: the older one is decided before it, and wins.
    assert.equal(kind(admitter.admit(newer)), 'rejected OutOfcpu');
    assert.equal(kind(admitter.admit(older)), 'admitted');
    assert.deepEqual(events.reasons(), ['OutOfcpu']);
  });

  it('never changes a decision and records each rejection once', () => {
    const a = cpuPod('a', '3', 1);
    const { admitter, events } = setup([a]);
    for (let i = 0; i < 3; i++) assert.equal(kind(admitter.admit(a)), 'rejected OutOfcpu');
    assert.equal(admitter.rejectionOf('uid-a')?.reason, 'OutOfcpu');
    assert.equal(events.events.length, 1);
  });

  it('frees what a pod held once its lifecycle reaches terminated, and forgets it', () => {
    const a = cpuPod('a', '1500m', 1, { hostPort: 8080 });
    const b = cpuPod('b', '1500m', 2, { hostPort: 8080 });
    const c = cpuPod('c', '1500m', 3, { hostPort: 8080 });
    const { admitter } = setup([a, b, c]);
    assert.equal(kind(admitter.admit(a)), 'admitted');
    assert.equal(kind(admitter.admit(b)), 'rejected OutOfcpu');
    admitter.podTerminated({ uid: 'uid-a', namespace: 'default', name: 'a' });
    assert.equal(kind(admitter.admit(c)), 'admitted', 'a terminated pod holds neither CPU nor its host port');
    admitter.podForgotten({ uid: 'uid-b', namespace: 'default', name: 'b' });
    assert.equal(admitter.rejectionOf('uid-b'), undefined);
  });

  it('rejects a host port an admitted pod holds', () => {
    const a = cpuPod('a', '100m', 1, { hostPort: 8080 });
    const b = cpuPod('b', '100m', 2, { hostPort: 8080 });
    const { admitter } = setup([a, b]);
    assert.equal(kind(admitter.admit(a)), 'admitted');
    assert.equal(kind(admitter.admit(b)), 'rejected NodePorts');
  });

  it('leaves finished and deleting pods out of the older pods it admits first', () => {
    const done = cpuPod('done', '1500m', 1, { phase: 'Succeeded' });
    const deleting = { ...cpuPod('deleting', '1500m', 2), metadata: { ...cpuPod('deleting', '1500m', 2).metadata, deletionTimestamp: new Date() } };
    const next = cpuPod('next', '1500m', 3);
    const { admitter } = setup([done, deleting, next]);
    assert.equal(kind(admitter.admit(next)), 'admitted');
  });

  it('decides nothing before the node is known', () => {
    const a = cpuPod('a', '100m', 1);
    const nodeObject: { value: V1Node | undefined } = { value: undefined };
    const { admitter, events } = setup([a], nodeObject);
    assert.equal(kind(admitter.admit(a)), 'deferred');
    nodeObject.value = node;
    assert.equal(kind(admitter.admit(a)), 'admitted');
    assert.equal(events.events.length, 0);
  });
});
