/**
 * The kubelet's declared-features admission (NodeDeclaredFeatures, GA in 1.37): a pod is rejected
 * (`PodFeatureUnsupported`) when it needs a node feature the node does not declare in its
 * `status.declaredFeatures`. The scheduler's NodeDeclaredFeatures filter keeps such pods off the
 * node already; this catches those bound by `spec.nodeName`.
 *
 * What a pod needs is inferred as k8s.io/component-helpers/nodedeclaredfeatures does for
 * scheduling; the features whose inference looks only at pod updates (resizes) or never at a pod
 * are left out. nodelet declares RestartAllContainersOnContainerExits (beta and on in the kubelet,
 * which declares it while its gate is on): it restarts all containers of a pod in place
 * (`model/restart-all.ts`). It declares neither of the other two, alpha and off in 1.37 (the API
 * server drops or refuses their fields). The Node's status carries the same list
 * (`controllers/node/node-status.ts`).
 */
import type { V1Container, V1PodSpec, V1VolumeMount } from '@kubernetes/client-node';
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';
import { RESTART_ALL_CONTAINERS_ACTION } from '../model/restart-policy.js';

export const POD_FEATURE_UNSUPPORTED_REASON = 'PodFeatureUnsupported';

/** The in-place restart of a whole pod on a container's exit (`restartPolicyRules` action `RestartAllContainers`). */
export const RESTART_ALL_CONTAINERS_FEATURE = 'RestartAllContainersOnContainerExits';

/** The features this node declares (the Node's `status.declaredFeatures`), sorted as the kubelet lists them. */
export const NODE_DECLARED_FEATURES: readonly string[] = [RESTART_ALL_CONTAINERS_FEATURE];

function allContainers(spec: V1PodSpec | undefined): V1Container[] {
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

/** `volumeMounts[].bindMountOptions` (alpha in 1.37, newer than client-node's types). */
function bindMountOptionsOf(mount: V1VolumeMount): readonly string[] | undefined {
  return (mount as V1VolumeMount & { bindMountOptions?: string[] }).bindMountOptions;
}

/** Each node feature a pod can need to be scheduled, and how to tell that it does. */
const SCHEDULING_REQUIREMENTS: readonly { readonly feature: string; readonly needs: (spec: V1PodSpec | undefined) => boolean }[] = [
  { feature: RESTART_ALL_CONTAINERS_FEATURE, needs: (spec) => allContainers(spec).some((c) => (c.restartPolicyRules ?? []).some((r) => r.action === RESTART_ALL_CONTAINERS_ACTION)) },
  { feature: 'UserNamespacesHostNetworkSupport', needs: (spec) => spec?.hostNetwork === true && spec.hostUsers === false },
  { feature: 'VolumeBindMountOptions', needs: (spec) => allContainers(spec).some((c) => (c.volumeMounts ?? []).some((m) => (bindMountOptionsOf(m) ?? []).length > 0)) },
];

/** The node features the pod needs, sorted. */
export function requiredNodeFeatures(spec: V1PodSpec | undefined): string[] {
  return SCHEDULING_REQUIREMENTS.filter((r) => r.needs(spec)).map((r) => r.feature).sort();
}

export function declaredFeaturesAdmitHandler(declared: readonly string[] = NODE_DECLARED_FEATURES): PodAdmitHandler {
  return {
    name: 'declared-features',
    admit: ({ pod }): AdmitResult => {
      const missing = requiredNodeFeatures(pod.spec).filter((f) => !declared.includes(f));
      if (missing.length === 0) return ADMITTED;
      return { admit: false, reason: POD_FEATURE_UNSUPPORTED_REASON, message: `Pod requires node features that are not available: ${missing.join(', ')}` };
    },
  };
}
