/**
 * Checks of the cluster DNS settings, shared by the agent's flags (`--cluster-dns`,
 * `--cluster-domain`) and the NodeAgent's live settings (`spec.clusterDNS`, `spec.clusterDomain`),
 * so both refuse the same values with the same words.
 */
import net from 'node:net';

/** At most this many cluster DNS servers are accepted: resolvers read no more (see `pod-dns.ts`). */
export const MAX_CLUSTER_DNS_SERVERS = 3;

// A DNS-1123 subdomain: lowercase labels of at most 63 characters, at most 253 in all.
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** Why `servers` cannot be the cluster DNS servers, or undefined when they can. */
export function clusterDnsProblem(servers: readonly string[]): string | undefined {
  const bad = servers.find((ip) => net.isIP(ip) === 0);
  if (bad !== undefined) return `"${bad}" is not an IP address`;
  if (servers.length > MAX_CLUSTER_DNS_SERVERS) return `at most ${MAX_CLUSTER_DNS_SERVERS} servers, got ${servers.length}`;
  return undefined;
}

/** Why `domain` cannot be the cluster domain, or undefined when it can (empty is allowed: no cluster search domains). */
export function clusterDomainProblem(domain: string): string | undefined {
  if (domain === '' || (domain.length <= 253 && DNS_SUBDOMAIN.test(domain))) return undefined;
  return `"${domain}" is not a DNS subdomain (lowercase letters, digits, '-' and '.')`;
}
