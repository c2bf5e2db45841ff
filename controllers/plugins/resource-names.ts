/** The kubelet's check of a device plugin's resource name (`v1helper.IsExtendedResourceName`). */

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** A qualified name `prefix/name` whose name part is valid (63 characters at most) and prefix a DNS subdomain. */
function isQualifiedName(value: string): boolean {
  const parts = value.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? (parts[1] ?? '') : value;
  const prefix = parts.length === 2 ? (parts[0] ?? '') : undefined;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length > 0 && name.length <= 63 && NAME.test(name);
}

/**
 * An extended resource name: a domain other than `kubernetes.io` (or its subdomains), not
 * `requests.`-prefixed, and a valid qualified name even as a quota's `requests.<name>`.
 */
export function isExtendedResourceName(name: string): boolean {
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const domain = name.slice(0, slash);
  if (domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io') || name.startsWith('requests.')) return false;
  return isQualifiedName(`requests.${name}`) && isQualifiedName(name);
}
