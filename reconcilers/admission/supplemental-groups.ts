/**
 * The kubelet's check of `supplementalGroupsPolicy` (part of its predicate admit handler): a pod
 * asking for `Strict` on a node whose runtime cannot enforce it (the Node's
 * `status.features.supplementalGroupsPolicy`, written from the runtime's CRI features) is rejected
 * rather than started with the image's groups merged in. containerd 2 enforces it; containerd 1.6
 * does not report the feature, so there Strict is refused.
 */
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';

export const SUPPLEMENTAL_GROUPS_POLICY_REASON = 'SupplementalGroupsPolicyNotSupported';

export function supplementalGroupsPolicyAdmitHandler(): PodAdmitHandler {
  return {
    name: 'supplemental-groups-policy',
    admit: ({ pod, node }): AdmitResult =>
      pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict' && node.status?.features?.supplementalGroupsPolicy !== true
        ? { admit: false, reason: SUPPLEMENTAL_GROUPS_POLICY_REASON, message: 'SupplementalGroupsPolicy=Strict is not supported in this node' }
        : ADMITTED,
  };
}
