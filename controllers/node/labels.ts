/**
 * Labels nodelet puts on its Node, and the NodeRestriction rule on which labels a node may set
 * about itself (kubernetes plugin/pkg/admission/noderestriction + k8s.io/kubelet well-known labels).
 */

/** Labels nodelet owns and keeps current on its Node. */
export function defaultNodeLabels(nodeName: string, architecture: string): Record<string, string> {
  return {
    // The node name, not the host name: in DaemonSet mode the host's kubelet already owns that.
    'kubernetes.io/hostname': nodeName,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': architecture,
  };
}

// Labels under kubernetes.io / k8s.io that NodeRestriction lets a kubelet set on its own Node.
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const NODE_RESTRICTION_NAMESPACE = 'node-restriction.kubernetes.io';

function labelNamespace(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function inNamespace(namespace: string, domain: string): boolean {
  return namespace === domain || namespace.endsWith('.' + domain);
}

function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const namespace = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((domain) => inNamespace(namespace, domain));
}

/**
 * Keys a node may not set on itself under NodeRestriction: anything in node-restriction.kubernetes.io,
 * and kubernetes.io / k8s.io labels that are not kubelet labels (e.g. `node-role.kubernetes.io/*`).
 */
export function forbiddenNodeLabels(labels: Readonly<Record<string, string>>): string[] {
  return Object.keys(labels)
    .filter((key) => {
      const namespace = labelNamespace(key);
      if (inNamespace(namespace, NODE_RESTRICTION_NAMESPACE)) return true;
      const kubernetesOwned = inNamespace(namespace, 'kubernetes.io') || inNamespace(namespace, 'k8s.io');
      return kubernetesOwned && !isKubeletLabel(key);
    })
    .sort();
}

/** Labels of `desired` missing from or different on `existing`: the patch that reconciles them. */
export function labelsToReconcile(
  existing: Readonly<Record<string, string>> | undefined,
  desired: Readonly<Record<string, string>>,
): Record<string, string> {
  const patch: Record<string, string> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (existing?.[key] !== value) patch[key] = value;
  }
  return patch;
}
