/**
 * The pod's QoS class, as `kubectl describe` shows it and as the kubelet computes it
 * (pkg/apis/core/v1/helper/qos): Guaranteed when every container has CPU and memory limits equal to
 * its requests, BestEffort when no container has any CPU or memory request or limit, else Burstable.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from './quantity.js';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const COMPUTE = ['cpu', 'memory'] as const;

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

function isGuaranteedContainer(c: V1Container): boolean {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  return COMPUTE.every((r) => {
    const limit = limits[r];
    if (limit === undefined) return false;
    const request = requests[r] ?? limit;
    return parseQuantity(request) === parseQuantity(limit);
  });
}

function hasComputeResources(c: V1Container): boolean {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  return COMPUTE.some((r) => limits[r] !== undefined || requests[r] !== undefined);
}

/** Computes the QoS class of a pod from its containers' resources. */
export function podQosClass(pod: V1Pod): QosClass {
  const containers = allContainers(pod);
  if (!containers.some(hasComputeResources)) return 'BestEffort';
  return containers.every(isGuaranteedContainer) ? 'Guaranteed' : 'Burstable';
}
