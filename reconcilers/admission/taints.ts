/**
 * Taints at admission: the kubelet checks only `NoExecute` taints (a `NoSchedule` taint is the
 * scheduler's business; a pod bound to the node by name passes it), and static pods not at all.
 * A pod is admitted when each NoExecute taint of the node is tolerated by one of its tolerations
 * (component-helpers' `FindMatchingUntoleratedTaint` with the NoExecute filter).
 */
import type { V1Node, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';

/** The kubelet's `Toleration.ToleratesTaint`: effect, key and (for `Equal`) value must match. */
export function tolerates(toleration: V1Toleration, taint: V1Taint): boolean {
  if (toleration.effect !== undefined && toleration.effect !== '' && toleration.effect !== taint.effect) return false;
  // An empty key with Exists tolerates every key.
  const keyMatches = (toleration.key ?? '') === '' ? toleration.operator === 'Exists' : toleration.key === taint.key;
  if (!keyMatches) return false;
  switch (toleration.operator ?? 'Equal') {
    case 'Exists':
      return true;
    case 'Equal':
    case '':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

/** The first NoExecute taint of the node no toleration of the pod tolerates, if any. */
export function untoleratedNoExecuteTaint(pod: V1Pod, node: V1Node): V1Taint | undefined {
  const tolerations = pod.spec?.tolerations ?? [];
  return (node.spec?.taints ?? []).find((taint) => taint.effect === 'NoExecute' && !tolerations.some((t) => tolerates(t, taint)));
}
