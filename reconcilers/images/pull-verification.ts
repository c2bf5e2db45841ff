/**
 * Whether a pod may use an image already on the node without pulling it, as the kubelet's
 * `imagePullCredentialsVerificationPolicy` (KubeletEnsureSecretPulledImages, on by default since
 * 1.35): an image pulled anonymously is everyone's; one pulled with credentials only theirs who
 * hold one of them; one nodelet never pulled ("preloaded") is trusted unless the policy is
 * `AlwaysVerify`. Otherwise the image is pulled again with the pod's own credentials, which the
 * registry refuses when the pod has none for it.
 */
import type { PulledRecord } from './pulled-records.js';

/** The kubelet's policies; `NeverVerifyAllowlistedImages` (with its allowlist) is not supported. */
export type PullVerificationPolicy = 'NeverVerify' | 'NeverVerifyPreloadedImages' | 'AlwaysVerify';

export const PULL_VERIFICATION_POLICIES: readonly PullVerificationPolicy[] = ['NeverVerify', 'NeverVerifyPreloadedImages', 'AlwaysVerify'];

/** True when the pod must pull the present image with its own credentials before using it. */
export function mustVerifyPull(policy: PullVerificationPolicy, record: PulledRecord | undefined, podCredentialHashes: readonly string[]): boolean {
  if (policy === 'NeverVerify') return false;
  if (record === undefined) return policy === 'AlwaysVerify';
  if (record.anonymous) return false;
  return !podCredentialHashes.some((hash) => record.credentialHashes.includes(hash));
}
