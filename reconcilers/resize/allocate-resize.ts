/**
 * Whether a pod's resize can be allocated now: the pure core of the kubelet's
 * `handlePodResourcesResize` (pkg/kubelet/allocation/allocation_manager.go, v1.36).
 *
 * - Nothing to decide when the spec's CPU and memory equal the allocation.
 * - A change of pod-level `spec.resources` is Infeasible: nodelet resizes container resources only (the pod cgroup follows them)
 *   (the kubelet answers Infeasible too while InPlacePodLevelResourcesVerticalScaling is off).
 * - Otherwise the resized pod must fit the node's allocatable beside the other admitted pods, with
 *   their allocated (not desired) resources: the resources-fit admit handler. A resize that does
 *   not fit is Deferred with the handler's message (v1.36 reports every fit failure as Deferred,
 *   even one larger than the whole node: only the runtime-side refusals are Infeasible), and is
 *   tried again when pods leave the node or the spec changes.
 */
import type { V1Node, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { insufficientMessage, insufficientResources } from '../admission/resources-fit.js';
import { sameValues, valuesOf } from '../model/resource-values.js';

export type AllocationDecision =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'allocate' }
  | { readonly kind: 'pending'; readonly reason: 'Deferred' | 'Infeasible'; readonly message: string };

export interface AllocationInput {
  /** The pod as the API has it now. */
  readonly desired: V1Pod;
  /** The same pod with its containers' resources as allocated. */
  readonly allocated: V1Pod;
  /** The pod-level resources the pod was admitted with (undefined when it had none). */
  readonly allocatedPodResources: V1ResourceRequirements | undefined;
  readonly node: V1Node;
  /** The other pods holding the node's resources, as allocated. */
  readonly others: readonly V1Pod[];
}

export const POD_LEVEL_RESIZE_MESSAGE = 'In-place resize of pod-level resources is not supported by nodelet yet';

function containersChanged(desired: V1Pod, allocated: V1Pod): boolean {
  const before = new Map([...(allocated.spec?.initContainers ?? []), ...(allocated.spec?.containers ?? [])].map((c) => [c.name, valuesOf(c.resources)]));
  return [...(desired.spec?.initContainers ?? []), ...(desired.spec?.containers ?? [])].some((c) => {
    const old = before.get(c.name);
    return old === undefined || !sameValues(old, valuesOf(c.resources));
  });
}

/** Decides a pending resize. Pure. */
export function decideAllocation(input: AllocationInput): AllocationDecision {
  const podLevelChanged = !sameValues(valuesOf(input.desired.spec?.resources), valuesOf(input.allocatedPodResources));
  if (!podLevelChanged && !containersChanged(input.desired, input.allocated)) return { kind: 'unchanged' };
  if (podLevelChanged) return { kind: 'pending', reason: 'Infeasible', message: POD_LEVEL_RESIZE_MESSAGE };
  const uid = input.desired.metadata?.uid;
  const lack = insufficientResources(input.desired, input.node, input.others.filter((p) => p.metadata?.uid !== uid))[0];
  if (lack !== undefined) return { kind: 'pending', reason: 'Deferred', message: insufficientMessage(lack) };
  return { kind: 'allocate' };
}
