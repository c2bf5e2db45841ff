/**
 * The kubelet's check of `supplementalGroupsPolicy` (part of its predicate admit handler): a pod
 * asking for `Strict` on a node whose runtime cannot enforce it is rejected rather than started
 * with the image's groups merged in. nodelet's runtime (containerd 1.6) has no such feature, and
 * nodelet does not send the policy, so Strict is always refused here.
 */
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';

export const SUPPLEMENTAL_GROUPS_POLICY_REASON = 'SupplementalGroupsPolicyNotSupported';

export function supplementalGroupsPolicyAdmitHandler(): PodAdmitHandler {
  return {
    name: 'supplemental-groups-policy',
    admit: ({ pod }): AdmitResult =>
      pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict'
        ? { admit: false, reason: SUPPLEMENTAL_GROUPS_POLICY_REASON, message: 'SupplementalGroupsPolicy=Strict is not supported in this node' }
        : ADMITTED,
  };
}
