/**
 * The resource part of the kubelet's general predicates (the scheduler's `noderesources.Fits`, run
 * again by the kubelet at admission): the pod's effective requests must fit in the node's
 * allocatable minus what the admitted, not yet terminated pods request, and one more pod must fit
 * in allocatable `pods`. Every shortfall is listed, in the kubelet's order (pods, cpu, memory,
 * ephemeral-storage, then other resources by name); the admit handler reports the first.
 *
 * As the kubelet, extended resources (`example.com/gpu`) the node does not advertise are dropped
 * from the pod's requests first: they are cluster-level resources the node does not account.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { amountsOf, podRequests, type ResourceAmounts } from './pod-requests.js';

/** One resource the node is short of; the numbers as the kubelet's message prints them. */
export interface InsufficientResource {
  readonly resourceName: string;
  readonly requested: number;
  readonly used: number;
  readonly capacity: number;
}

const FIRST_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;

/** Native resources have no domain or a `kubernetes.io/` one; the rest (but quota's `requests.`) are extended. */
export function isExtendedResourceName(name: string): boolean {
  return name.includes('/') && !name.includes('kubernetes.io/') && !name.startsWith('requests.');
}

/** The sum of the effective requests of `pods`. */
export function requestedBy(pods: readonly V1Pod[]): ResourceAmounts {
  const total: ResourceAmounts = new Map();
  for (const pod of pods) {
    for (const [name, amount] of podRequests(pod)) total.set(name, (total.get(name) ?? 0) + amount);
  }
  return total;
}

function shortOf(name: string, wanted: number, used: ResourceAmounts, allocatable: ResourceAmounts): InsufficientResource | undefined {
  const capacity = allocatable.get(name) ?? 0;
  const taken = used.get(name) ?? 0;
  if (wanted <= 0 || wanted <= capacity - taken) return undefined;
  return { resourceName: name, requested: wanted, used: taken, capacity };
}

/**
 * What the node lacks to admit `pod` beside `otherPods`; empty when it fits. `node` is the Node
 * object: its `status.allocatable` is what pods may use.
 */
export function insufficientResources(pod: V1Pod, node: V1Node, otherPods: readonly V1Pod[]): InsufficientResource[] {
  const allocatable = amountsOf(node.status?.allocatable);
  const short: InsufficientResource[] = [];
  const allowedPods = allocatable.get('pods') ?? 0;
  if (otherPods.length + 1 > allowedPods) short.push({ resourceName: 'pods', requested: 1, used: otherPods.length, capacity: allowedPods });
  const wanted = podRequests(pod);
  for (const name of [...wanted.keys()]) {
    if (name === 'pods' || (isExtendedResourceName(name) && !allocatable.has(name))) wanted.delete(name);
  }
  const used = requestedBy(otherPods);
  const others = [...wanted.keys()].filter((n) => !(FIRST_RESOURCES as readonly string[]).includes(n)).sort();
  for (const name of [...FIRST_RESOURCES, ...others]) {
    const lack = shortOf(name, wanted.get(name) ?? 0, used, allocatable);
    if (lack !== undefined) short.push(lack);
  }
  return short;
}

/** The kubelet's reason for a shortfall: `OutOfcpu`, `OutOfmemory`, `OutOfpods`, `OutOfexample.com/gpu`. */
export function outOfReason(lack: InsufficientResource): string {
  return `OutOf${lack.resourceName}`;
}

/** The kubelet's message for a shortfall. */
export function insufficientMessage(lack: InsufficientResource): string {
  return `Node didn't have enough resource: ${lack.resourceName}, requested: ${lack.requested}, used: ${lack.used}, capacity: ${lack.capacity}`;
}
