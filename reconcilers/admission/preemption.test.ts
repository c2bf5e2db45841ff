/** The kubelet's choice of pods to preempt for a critical pod (its preemption_test.go cases, read for semantics). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NoPreemptionVictimsError, podsToPreempt, preemptable, requirementsOf } from './preemption.js';

function pod(name: string, requests: Record<string, string> | undefined, limits?: Record<string, string>, priority?: number): V1Pod {
  const resources = { ...(requests === undefined ? {} : { requests }), ...(limits === undefined ? {} : { limits }) };
  return { metadata: { name, uid: name }, spec: { ...(priority === undefined ? {} : { priority }), containers: [{ name: 'c', image: 'i', resources }] } };
}
const criticalPod = pod('critical', { cpu: '100m' }, undefined, 2_000_001_000);
const names = (pods: readonly V1Pod[]): string[] => pods.map((p) => p.metadata?.name ?? '');

describe('preemption for a critical pod', () => {
  it('takes BestEffort pods before Burstable before Guaranteed', () => {
    const bestEffort = pod('best-effort', undefined);
    const burstable = pod('burstable', { memory: '100Mi' });
    const guaranteed = pod('guaranteed', { cpu: '100m', memory: '100Mi' }, { cpu: '100m', memory: '100Mi' });
    assert.deepEqual(names(podsToPreempt(criticalPod, [guaranteed, burstable, bestEffort], [{ resourceName: 'pods', quantity: 1 }])), ['best-effort']);
    assert.deepEqual(names(podsToPreempt(criticalPod, [guaranteed, burstable], [{ resourceName: 'memory', quantity: 100 * 1024 * 1024 }])), ['burstable']);
  });

  it('takes the pod closest to what is missing, the smaller one on a tie, and as few as needed', () => {
    const a = pod('a-1000m', { cpu: '1' });
    const b = pod('b-500m', { cpu: '500m' });
    const c = pod('c-300m', { cpu: '300m' });
    assert.deepEqual(names(podsToPreempt(criticalPod, [a, b, c], [{ resourceName: 'cpu', quantity: 400 }])), ['b-500m']);
    assert.deepEqual(names(podsToPreempt(criticalPod, [a, b, c], [{ resourceName: 'cpu', quantity: 1200 }])), ['a-1000m', 'c-300m']);
  });

  it('never preempts a critical pod, nor one of equal or higher priority', () => {
    const otherCritical = pod('other', { cpu: '1' }, undefined, 2_000_001_000);
    assert.equal(preemptable(criticalPod, otherCritical), false);
    assert.equal(preemptable(pod('p', undefined, undefined, 10), pod('q', undefined, undefined, 10)), false);
    assert.equal(preemptable(pod('p', undefined, undefined, 11), pod('q', undefined, undefined, 10)), true);
    assert.throws(() => podsToPreempt(criticalPod, [otherCritical], [{ resourceName: 'cpu', quantity: 500 }]), (e: unknown) => e instanceof NoPreemptionVictimsError && e.message.includes('[(res: cpu, q: 500), ]'));
  });

  it('needs what is missing: requested less what allocatable leaves', () => {
    assert.deepEqual(requirementsOf([{ resourceName: 'cpu', requested: 1000, used: 1500, capacity: 2000 }]), [{ resourceName: 'cpu', quantity: 500 }]);
  });
});
