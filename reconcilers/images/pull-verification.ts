/**
 * Whether a pod may use an image already on the node without pulling it, as the kubelet's
 * `imagePullCredentialsVerificationPolicy` (KubeletEnsureSecretPulledImages, on by default since
 * 1.35): an image pulled anonymously or with the node's own credentials (a credential provider
 * plugin's) is everyone's; one pulled with a pod's credentials only theirs who
 * hold one of them; one nodelet never pulled ("preloaded") is trusted unless the policy is
 * `AlwaysVerify`. Otherwise the image is pulled again with the pod's own credentials, which the
 * registry refuses when the pod has none for it.
 */
import type { PulledRecord } from './pulled-records.js';

/** The kubelet's policies; `NeverVerifyAllowlistedImages` (with its allowlist) is not supported. */
export type PullVerificationPolicy = 'NeverVerify' | 'NeverVerifyPreloadedImages' | 'AlwaysVerify';

export const PULL_VERIFICATION_POLICIES: readonly PullVerificationPolicy[] = ['NeverVerify', 'NeverVerifyPreloadedImages', 'AlwaysVerify'];

/**
 * The answer when the pod's credentials do not matter (the policy, no record, an anonymous pull),
 * else undefined: then only the pod's credentials decide, and they need reading.
 */
export function verdictWithoutCredentials(policy: PullVerificationPolicy, record: PulledRecord | undefined): boolean | undefined {
  if (policy === 'NeverVerify') return false;
  if (record === undefined) return policy === 'AlwaysVerify';
  return record.anonymous || record.nodeWide ? false : undefined;
}

/** True when the pod must pull the present image with its own credentials before using it. */
export function mustVerifyPull(policy: PullVerificationPolicy, record: PulledRecord | undefined, podCredentialHashes: readonly string[]): boolean {
  return verdictWithoutCredentials(policy, record) ?? !podCredentialHashes.some((hash) => record?.credentialHashes.includes(hash) === true);
}

/** The kubelet's result of one check whether a present image must be pulled again (`kubelet_imagemanager_image_mustpull_checks_total`). */
export type MustPullCheckResult = 'credentialPolicyAllowed' | 'credentialRecordFound' | 'mustAuthenticate' | 'error';

/**
 * The result the kubelet's pull manager records for a verdict: the policy let the pod use the image
 * without looking at credentials; a record of a pull the pod may rely on (anonymous, node-wide, or
 * with a credential the pod holds) was found; or the pod must authenticate. Pure.
 */
export function mustPullCheckResult(policy: PullVerificationPolicy, record: PulledRecord | undefined, mustPull: boolean): MustPullCheckResult {
  if (mustPull) return 'mustAuthenticate';
  return policy === 'NeverVerify' || record === undefined ? 'credentialPolicyAllowed' : 'credentialRecordFound';
}
