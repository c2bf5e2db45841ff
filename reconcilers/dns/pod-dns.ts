/**
 * A pod's resolver configuration, as the kubelet's `GetPodDNS` forms it (pkg/kubelet/network/dns):
 * pure, so every policy and limit is a table test. The result goes into the CRI sandbox config
 * (`PodSandboxConfig.dnsConfig`); the runtime writes the sandbox's resolv.conf from it.
 *
 * - `dnsPolicy: None`: an empty base; everything comes from `dnsConfig`.
 * - `ClusterFirst` (the default) and `ClusterFirstWithHostNet`: the cluster DNS servers only (they
 *   forward what they cannot answer), the cluster's search domains before the host's, `ndots:5`.
 *   A hostNetwork pod with plain `ClusterFirst` falls back to `Default`, and so does every
 *   cluster-first pod of a node with no cluster DNS configured (a `MissingClusterDNS` warning).
 * - `Default`: the host's resolv.conf; with resolv.conf disabled (`--resolv-conf ''`) the local
 *   resolver (`127.0.0.1`, or `::1` on an IPv6 node) and search `.`, which disables lookups.
 *
 * `dnsConfig` is then appended: nameservers and searches without duplicates, options merged by
 * name with the pod's value winning. Last, the limits of resolvers are applied — at most 3
 * nameservers; at most 32 search domains, none longer than 253 characters, the search line at
 * most 2048 characters — dropping from the end, each trim reported as a `DNSConfigForming` warning.
 */
import type { V1Pod, V1PodDNSConfig, V1PodDNSConfigOption } from '@kubernetes/client-node';
import type { DnsConfig } from '../../cri/types.js';
import type { PodEvent } from '../events/event-recorder.js';

/** Resolvers read at most this many `nameserver` lines (glibc's MAXNS). */
export const MAX_DNS_NAMESERVERS = 3;
/** Search domains the kubelet passes on (the API's expanded limit). */
export const MAX_DNS_SEARCH_PATHS = 32;
/** Characters of the joined search line the kubelet passes on. */
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
/** Longer search domains make some resolvers (glibc 2.28) abort; the kubelet drops them. */
const MAX_SEARCH_DOMAIN_CHARS = 253;
const CLUSTER_FIRST_OPTIONS: readonly string[] = ['ndots:5'];

/** The node's cluster DNS settings (`--cluster-dns`, `--cluster-domain`, or the NodeAgent's). */
export interface ClusterDnsSettings {
  /** Cluster DNS server IPs; empty when none is configured. */
  readonly servers: readonly string[];
  /** e.g. `cluster.local`; empty leaves the cluster search domains out. */
  readonly domain: string;
}

/** What {@link computePodDns} works from. */
export interface PodDnsInput {
  readonly pod: V1Pod;
  readonly cluster: ClusterDnsSettings;
  /** The parsed host resolv.conf; undefined when resolv.conf is disabled (`--resolv-conf ''`). */
  readonly host: DnsConfig | undefined;
  /** The node's IP: picks the local resolver's address family when resolv.conf is disabled. */
  readonly nodeIp: string;
}

/** The pod's resolver configuration and the warnings forming it raised. */
export interface PodDnsResult {
  readonly config: DnsConfig;
  /** Warning events about the pod (`MissingClusterDNS`, `DNSConfigForming`), in order. */
  readonly events: readonly PodEvent[];
}

type DnsBase = 'cluster' | 'host' | 'none';

/** The policy's base, as the kubelet's `getPodDNSType` (an unknown policy is treated as ClusterFirst). */
export function dnsBaseOf(pod: V1Pod): DnsBase {
  switch (pod.spec?.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'Default':
      return 'host';
    case 'ClusterFirst':
    default:
      // A pod on the host's network cannot reach the cluster DNS by its service IP reliably: the
      // kubelet gives it the host's resolver unless it asked for ClusterFirstWithHostNet.
      return pod.spec?.hostNetwork === true ? 'host' : 'cluster';
  }
}

/** `name_namespace(uid)`, the kubelet's `format.Pod`. */
function formatPod(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

function omitDuplicates(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** `<ns>.svc.<domain> svc.<domain> <domain>`, then the host's searches, without duplicates. */
function clusterSearches(pod: V1Pod, domain: string, hostSearches: readonly string[]): string[] {
  if (domain === '') return [...hostSearches];
  const namespace = pod.metadata?.namespace ?? 'default';
  return omitDuplicates([`${namespace}.svc.${domain}`, `svc.${domain}`, domain, ...hostSearches]);
}

/** The host's resolver, or the local resolver when resolv.conf is disabled. */
function hostBase(host: DnsConfig | undefined, nodeIp: string): DnsConfig {
  if (host !== undefined) return host;
  return { servers: [nodeIp.includes(':') ? '::1' : '127.0.0.1'], searches: ['.'], options: [] };
}

/**
 * Merges resolver options by name: the pod's entries overwrite the base's. Unlike the kubelet
 * (whose Go map returns them in random order) the order is stable: first appearance of each name.
 */
export function mergeDnsOptions(base: readonly string[], podOptions: readonly V1PodDNSConfigOption[]): string[] {
  const merged = new Map<string, string>();
  for (const option of base) {
    const colon = option.indexOf(':');
    if (colon === -1) merged.set(option, '');
    else merged.set(option.slice(0, colon), option.slice(colon + 1));
  }
  for (const option of podOptions) merged.set(option.name ?? '', option.value ?? '');
  return [...merged].map(([name, value]) => (value === '' ? name : `${name}:${value}`));
}

function appendPodDnsConfig(base: DnsConfig, extra: V1PodDNSConfig | undefined): DnsConfig {
  if (extra === undefined) return base;
  return {
    servers: omitDuplicates([...base.servers, ...(extra.nameservers ?? [])]),
    searches: omitDuplicates([...base.searches, ...(extra.searches ?? [])]),
    options: mergeDnsOptions(base.options, extra.options ?? []),
  };
}

function warning(message: string): PodEvent {
  return { type: 'Warning', reason: 'DNSConfigForming', message };
}

/** At most {@link MAX_DNS_NAMESERVERS}, the rest dropped with a warning. */
export function fitNameservers(servers: readonly string[]): { servers: string[]; event?: PodEvent } {
  if (servers.length <= MAX_DNS_NAMESERVERS) return { servers: [...servers] };
  const kept = servers.slice(0, MAX_DNS_NAMESERVERS);
  return { servers: kept, event: warning(`Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${kept.join(' ')}`) };
}

/** The search list within the count, domain-length and line-length limits, with a warning when trimmed. */
export function fitSearches(searches: readonly string[]): { searches: string[]; event?: PodEvent } {
  const counted = searches.slice(0, MAX_DNS_SEARCH_PATHS);
  let kept = counted.filter((s) => s.length <= MAX_SEARCH_DOMAIN_CHARS);
  let trimmed = counted.length < searches.length || kept.length < counted.length;
  // Drop domains from the end until the line (domains joined by one space) fits.
  while (kept.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS) {
    kept = kept.slice(0, -1);
    trimmed = true;
  }
  if (!trimmed) return { searches: kept };
  return { searches: kept, event: warning(`Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${kept.join(' ')}`) };
}

function missingClusterDnsEvent(pod: V1Pod): PodEvent {
  const nodeMessage = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
  return { type: 'Warning', reason: 'MissingClusterDNS', message: `pod: "${formatPod(pod)}". ${nodeMessage}` };
}

/** The pod's resolver configuration. Pure. */
export function computePodDns(input: PodDnsInput): PodDnsResult {
  const { pod, cluster } = input;
  const events: PodEvent[] = [];
  let base: DnsConfig;
  const kind = dnsBaseOf(pod);
  if (kind === 'none') {
    base = { servers: [], searches: [], options: [] };
  } else if (kind === 'cluster' && cluster.servers.length > 0) {
    const hostSearches = input.host?.searches ?? [];
    base = { servers: [...cluster.servers], searches: clusterSearches(pod, cluster.domain, hostSearches), options: CLUSTER_FIRST_OPTIONS };
  } else {
    if (kind === 'cluster') events.push(missingClusterDnsEvent(pod));
    base = hostBase(input.host, input.nodeIp);
  }
  const merged = appendPodDnsConfig(base, pod.spec?.dnsConfig);
  const servers = fitNameservers(merged.servers);
  const searches = fitSearches(merged.searches);
  for (const event of [servers.event, searches.event]) if (event !== undefined) events.push(event);
  return { config: { servers: servers.servers, searches: searches.searches, options: [...merged.options] }, events };
}
