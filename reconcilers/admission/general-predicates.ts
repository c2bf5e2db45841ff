/**
 * The kubelet's predicate admit handler, the part that needs the node and the other pods: the OS
 * label check, then the scheduler's general predicates run again on this node (resources fit,
 * required node affinity and nodeSelector, nodeName, host ports) and the NoExecute taints. As the
 * kubelet, every failure is collected and the first decides the reason and message:
 *
 * - a resource: `OutOfcpu` / `OutOfmemory` / `OutOfephemeral-storage` / `OutOfpods`,
 *   `Node didn't have enough resource: cpu, requested: 500, used: 1900, capacity: 2000`;
 * - a predicate: its name (`NodeAffinity`, `NodeName`, `NodePorts`, `TaintToleration`) and
 *   `Predicate <name> failed: <the scheduler's reason>`.
 *
 * A pod bound with `spec.nodeName` bypasses the scheduler; this is what still keeps it off a node
 * it does not fit.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ADMITTED, type AdmitResult, type PodAdmitHandler, type Rejection } from './admit.js';
import { matchesNodeSelectorAndAffinity } from './node-affinity.js';
import { hostPortsFree } from './node-ports.js';
import { insufficientMessage, insufficientResources, outOfReason } from './resources-fit.js';
import { untoleratedNoExecuteTaint } from './taints.js';
import { isCriticalPod } from './node-pressure.js';
import { NoPreemptionVictimsError, podsToPreempt, requirementsOf } from './preemption.js';

export const NODE_AFFINITY_REASON = 'NodeAffinity';
export const NODE_AFFINITY_MESSAGE = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector";
export const NODE_NAME_REASON = 'NodeName';
export const NODE_NAME_MESSAGE = "Predicate NodeName failed: node(s) didn't match the requested node name";
export const NODE_PORTS_REASON = 'NodePorts';
export const NODE_PORTS_MESSAGE = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports";
export const TAINT_REASON = 'TaintToleration';
export const TAINT_MESSAGE = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate";
export const OS_SELECTOR_REASON = 'PodOSSelectorNodeLabelDoesNotMatch';
export const OS_SELECTOR_MESSAGE = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label";

const OS_LABEL = 'kubernetes.io/os';

/** Every general predicate the pod fails, in the kubelet's order. */
export function generalPredicateFailures(pod: V1Pod, node: V1Node, otherPods: readonly V1Pod[]): Rejection[] {
  const failures: Rejection[] = insufficientResources(pod, node, otherPods).map((lack) => ({ admit: false, reason: outOfReason(lack), message: insufficientMessage(lack) }));
  if (!matchesNodeSelectorAndAffinity(pod, node)) failures.push({ admit: false, reason: NODE_AFFINITY_REASON, message: NODE_AFFINITY_MESSAGE });
  const nodeName = pod.spec?.nodeName;
  if (nodeName !== undefined && nodeName !== '' && nodeName !== node.metadata?.name) failures.push({ admit: false, reason: NODE_NAME_REASON, message: NODE_NAME_MESSAGE });
  if (!hostPortsFree(pod, otherPods)) failures.push({ admit: false, reason: NODE_PORTS_REASON, message: NODE_PORTS_MESSAGE });
  // Static pods are exempt in the kubelet; nodelet runs none yet, so every pod is checked.
  if (untoleratedNoExecuteTaint(pod, node) !== undefined) failures.push({ admit: false, reason: TAINT_REASON, message: TAINT_MESSAGE });
  return failures;
}

export const UNEXPECTED_ADMISSION_ERROR = 'UnexpectedAdmissionError';

/**
 * A critical pod's failures, as the kubelet's CriticalPodAdmissionHandler takes them: a resource
 * shortfall is no reason to reject it; the pods that free the room are preempted instead. Another
 * failure rejects it (the first that is not a resource); no set of pods that frees enough is the
 * kubelet's `UnexpectedAdmissionError`.
 */
function criticalPodVerdict(pod: V1Pod, failures: readonly Rejection[], fit: { node: V1Node; otherPods: readonly V1Pod[] }): AdmitResult {
  const lacks = insufficientResources(pod, fit.node, fit.otherPods);
  const other = failures.slice(lacks.length)[0];
  if (other !== undefined) return other;
  try {
    return { admit: true, preempt: { victims: podsToPreempt(pod, fit.otherPods, requirementsOf(lacks)), resource: lacks[0]?.resourceName ?? '' } };
  } catch (error) {
    if (!(error instanceof NoPreemptionVictimsError)) throw error;
    return { admit: false, reason: UNEXPECTED_ADMISSION_ERROR, message: `Unexpected error while attempting to recover from admission failure: ${error.message}` };
  }
}

/**
 * The general predicates as one handler: the first failure is the rejection (a critical pod's room
 * is made by preemption). `pluginResources` is the kubelet's plugin resource update: the Node as
 * the predicates see it for this pod (devices it already holds count as allocatable).
 */
export function generalPredicatesAdmitHandler(pluginResources?: (pod: V1Pod, node: V1Node) => V1Node): PodAdmitHandler {
  return {
    name: 'general-predicates',
    admit: ({ pod, node: registered, otherPods }): AdmitResult => {
      const node = pluginResources?.(pod, registered) ?? registered;
      const failures = generalPredicateFailures(pod, node, otherPods);
      const first = failures[0];
      if (first === undefined) return ADMITTED;
      return isCriticalPod(pod) ? criticalPodVerdict(pod, failures, { node, otherPods }) : first;
    },
  };
}

/**
 * The kubelet's first predicate check: a pod *labelled* `kubernetes.io/os` (its own label, not its
 * nodeSelector, as the kubelet reads it) with another OS than the node's is rejected. The node's
 * OS is always `nodeOs` (the kubelet overrides a missing or wrong node label with its GOOS).
 */
export function osSelectorAdmitHandler(nodeOs = 'linux'): PodAdmitHandler {
  return {
    name: 'os-selector',
    admit: ({ pod }): AdmitResult => {
      const wanted = pod.metadata?.labels?.[OS_LABEL];
      return wanted === undefined || wanted === nodeOs ? ADMITTED : { admit: false, reason: OS_SELECTOR_REASON, message: OS_SELECTOR_MESSAGE };
    },
  };
}
