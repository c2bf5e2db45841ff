/**
 * The text formats of a pod's name resolution, pure: the host's resolv.conf as the kubelet parses
 * it (`parseResolvConf`), and the pod's managed /etc/hosts as the kubelet writes it
 * (`managedHostsFileContent`, `nodeHostsFileContent`, `hostsEntriesFromHostAliases` in
 * pkg/kubelet/kubelet_pods.go), byte for byte, so tools that read either see what they expect.
 */
import type { V1HostAlias, V1Pod } from '@kubernetes/client-node';
import type { DnsConfig } from '../../cri/types.js';

/** A resolv.conf line the kubelet refuses (a `nameserver` line without an address). */
export class ResolvConfError extends Error {
  override readonly name = 'ResolvConfError';
}

export function isResolvConfError(error: unknown): error is ResolvConfError {
  return error instanceof ResolvConfError;
}

/**
 * Parses resolv.conf: `nameserver` lines accumulate, the last `search` and the last `options` line
 * win, comments (`#`) and other keywords are ignored. A trailing dot of a search domain is dropped,
 * so `example.com.` and `example.com` count once.
 * @throws ResolvConfError for a `nameserver` line without an address.
 */
export function parseResolvConf(text: string): DnsConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const [keyword, ...fields] = trimmed.split(/\s+/).filter((f) => f !== '');
    if (keyword === 'nameserver') {
      if (fields[0] === undefined) throw new ResolvConfError('nameserver list is empty');
      servers.push(fields[0]);
    } else if (keyword === 'search') {
      searches = fields.map((s) => s.replace(/\.$/, ''));
    } else if (keyword === 'options') {
      options = fields;
    }
  }
  return { servers, searches, options };
}

const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
const MANAGED_HOSTS_HEADER_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

/** The pod's host name and, when it has a `subdomain`, its domain `<subdomain>.<ns>.svc.<clusterDomain>`. */
export interface PodHostName {
  readonly hostname: string;
  /** Empty when the pod has no subdomain. */
  readonly domain: string;
}

/** A host name cut to 63 characters without a trailing `-` or `.` (a host name is at most 63 bytes; the kubelet's truncatePodHostnameIfNeeded). */
function truncatedHostName(name: string): string {
  return name.length <= 63 ? name : name.slice(0, 63).replace(/[-.]+$/, '');
}

/**
 * The pod's host name and domain, as the kubelet's `GeneratePodHostNameAndDomain` (1.37):
 * `spec.hostnameOverride` when set (a DNS subdomain the API server validated; no domain, whatever
 * `hostname` and `subdomain` say), else `spec.hostname` or the pod's name, with the domain from
 * `spec.subdomain`; each cut to 63 characters.
 */
export function podHostName(pod: V1Pod, clusterDomain: string): PodHostName {
  const spec = pod.spec;
  if (spec?.hostnameOverride !== undefined) return { hostname: truncatedHostName(spec.hostnameOverride), domain: '' };
  const name = spec?.hostname !== undefined && spec.hostname !== '' ? spec.hostname : (pod.metadata?.name ?? '');
  const subdomain = spec?.subdomain ?? '';
  const domain = subdomain === '' ? '' : `${subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}`;
  return { hostname: truncatedHostName(name), domain };
}

/** `\n# Entries added by HostAliases.\n` and one `<ip>\t<name>\t<name>…` line per alias; nothing without aliases. */
export function hostAliasEntries(aliases: readonly V1HostAlias[]): string {
  if (aliases.length === 0) return '';
  const lines = aliases.map((alias) => `${alias.ip}\t${(alias.hostnames ?? []).join('\t')}\n`);
  return `\n# Entries added by HostAliases.\n${lines.join('')}`;
}

/** The hosts file of a pod on its own network: localhost and IPv6 names, the pod's IPs with its names, the aliases. */
export function managedHostsFileContent(podIps: readonly string[], name: PodHostName, aliases: readonly V1HostAlias[]): string {
  const fixed = [
    MANAGED_HOSTS_HEADER,
    '127.0.0.1\tlocalhost\n',
    '::1\tlocalhost ip6-localhost ip6-loopback\n',
    'fe00::0\tip6-localnet\n',
    'fe00::0\tip6-mcastprefix\n',
    'fe00::1\tip6-allnodes\n',
    'fe00::2\tip6-allrouters\n',
  ];
  const own = podIps.map((ip) => (name.domain === '' ? `${ip}\t${name.hostname}\n` : `${ip}\t${name.hostname}.${name.domain}\t${name.hostname}\n`));
  return [...fixed, ...own].join('') + hostAliasEntries(aliases);
}

/** The hosts file of a host-network pod: the node's own hosts file, then the aliases. */
export function nodeHostsFileContent(nodeHosts: string, aliases: readonly V1HostAlias[]): string {
  return MANAGED_HOSTS_HEADER_HOST_NETWORK + nodeHosts + hostAliasEntries(aliases);
}
