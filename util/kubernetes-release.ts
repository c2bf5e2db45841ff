/**
 * The Kubernetes release whose kubelet nodelet follows (its behaviour, messages and user agents),
 * the same as the test cluster's pin (test/cluster/versions.env KUBERNETES_VERSION; a unit test
 * keeps the two equal).
 */
export const FOLLOWED_KUBERNETES_MINOR = '1.37';
