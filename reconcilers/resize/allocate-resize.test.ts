import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { decideAllocation, POD_LEVEL_RESIZE_MESSAGE } from './allocate-resize.js';

const node: V1Node = { metadata: { name: 'n' }, status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110' } } };

function pod(uid: string, cpu: string, memory = '64Mi'): V1Pod {
  return { metadata: { uid, name: uid }, spec: { containers: [{ name: 'c', resources: { requests: { cpu, memory }, limits: { cpu, memory } } }] } };
}

describe('decideAllocation (the kubelet handlePodResourcesResize)', () => {
  it('has nothing to decide while the spec equals the allocation (whatever the quantity spelling)', () => {
    assert.deepEqual(decideAllocation({ desired: pod('a', '1'), allocated: pod('a', '1000m'), allocatedPodResources: undefined, node, others: [] }), { kind: 'unchanged' });
  });

  it('allocates a resize that fits beside the other pods as they are allocated', () => {
    assert.deepEqual(decideAllocation({ desired: pod('a', '1500m'), allocated: pod('a', '500m'), allocatedPodResources: undefined, node, others: [pod('b', '500m')] }), { kind: 'allocate' });
  });

  it('defers a resize that does not fit, with the resources-fit message; the pod itself is not counted among the others', () => {
    const decision = decideAllocation({ desired: pod('a', '1600m'), allocated: pod('a', '500m'), allocatedPodResources: undefined, node, others: [pod('a', '500m'), pod('b', '500m')] });
    assert.deepEqual(decision, { kind: 'pending', reason: 'Deferred', message: "Node didn't have enough resource: cpu, requested: 1600, used: 500, capacity: 2000" });
  });

  it('defers memory the same way', () => {
    const decision = decideAllocation({ desired: pod('a', '100m', '4Gi'), allocated: pod('a', '100m'), allocatedPodResources: undefined, node, others: [pod('b', '100m', '1Gi')] });
    assert.equal(decision.kind === 'pending' ? decision.message : '', `Node didn't have enough resource: memory, requested: ${4 * 2 ** 30}, used: ${2 ** 30}, capacity: ${4 * 2 ** 30}`);
  });

  it('finds a pod-level resources change Infeasible (no pod cgroup to resize)', () => {
    const desired = { ...pod('a', '100m'), spec: { ...pod('a', '100m').spec!, resources: { limits: { cpu: '2' } } } };
    const decision = decideAllocation({ desired, allocated: pod('a', '100m'), allocatedPodResources: { limits: { cpu: '1' } }, node, others: [] });
    assert.deepEqual(decision, { kind: 'pending', reason: 'Infeasible', message: POD_LEVEL_RESIZE_MESSAGE });
  });
});
