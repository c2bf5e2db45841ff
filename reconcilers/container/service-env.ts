/**
 * Service environment variables, as the kubelet's `getServiceEnvVarMap` and `envvars.FromServices`
 * build them: for every service with a cluster IP (set and not `None`) that the pod should see —
 * the `kubernetes` service of the `default` namespace always (in-cluster clients read
 * `KUBERNETES_SERVICE_HOST`), every service of the pod's own namespace when `enableServiceLinks`
 * is true (its default) — the Docker-links style variables:
 *
 *   FOO_SERVICE_HOST, FOO_SERVICE_PORT, FOO_SERVICE_PORT_<PORTNAME> (named ports),
 *   FOO_PORT (first port), FOO_PORT_<port>_<PROTO>, …_PROTO, …_PORT, …_ADDR (every port).
 *
 * A service of the pod's namespace named like a master service replaces the default namespace's
 * one, as in the kubelet. Pure: plain data in, variables out.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { KeyValue } from '../../cri/types.js';

/** What the service variables are built from: the node's cached view of the cluster's services. */
export interface ServiceLister {
  /** True once services were listed at least once; before that no pod's env can be built (kubelet: `serviceHasSynced`). */
  hasSynced(): boolean;
  /** Every cached service, all namespaces. */
  list(): readonly V1Service[];
}

/** The kubelet's message when the services were never listed; the container fails with `CreateContainerConfigError`. */
export const SERVICES_NOT_SYNCED_MESSAGE = 'services have not yet been read at least once, cannot construct envvars';

/** Services in `default` whose variables every pod gets, whatever its enableServiceLinks. */
const MASTER_SERVICES: ReadonlySet<string> = new Set(['kubernetes']);
const MASTER_SERVICE_NAMESPACE = 'default';

/** The kubelet's `IsServiceIPSet`: headless (`None`) and IP-less services give no variables. */
function hasClusterIp(service: V1Service): boolean {
  const ip = service.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

/** The services a pod of `namespace` sees, one per name, sorted by name (the kubelet's order is a map's). */
export function visibleServices(services: readonly V1Service[], namespace: string, enableServiceLinks: boolean): V1Service[] {
  const byName = new Map<string, V1Service>();
  for (const service of services) {
    if (!hasClusterIp(service)) continue;
    const name = service.metadata?.name ?? '';
    const ns = service.metadata?.namespace;
    if (ns === MASTER_SERVICE_NAMESPACE && MASTER_SERVICES.has(name)) {
      // The pod's own namespace wins over the master service of the same name.
      if (!byName.has(name)) byName.set(name, service);
    } else if (ns === namespace && enableServiceLinks) {
      byName.set(name, service);
    }
  }
  return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
}

/** `my-svc` → `MY_SVC` (the kubelet changes only dashes and case). */
function envName(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}

/** Go's `net.JoinHostPort`: an IPv6 address goes in brackets. */
function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The Docker-compatible link variables of every port. */
function linkVariables(prefix: string, service: V1Service, ip: string): KeyValue[] {
  const vars: KeyValue[] = [];
  (service.spec?.ports ?? []).forEach((port, i) => {
    const protocol = port.protocol ?? 'TCP';
    const url = `${protocol.toLowerCase()}://${hostPort(ip, port.port)}`;
    // Docker special-cases the first port.
    if (i === 0) vars.push({ key: `${prefix}_PORT`, value: url });
    const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
    vars.push(
      { key: portPrefix, value: url },
      { key: `${portPrefix}_PROTO`, value: protocol.toLowerCase() },
      { key: `${portPrefix}_PORT`, value: String(port.port) },
      { key: `${portPrefix}_ADDR`, value: ip },
    );
  });
  return vars;
}

/** `envvars.FromServices`: the variables of each service, in the given order. */
export function variablesOfServices(services: readonly V1Service[]): KeyValue[] {
  return services.flatMap((service) => {
    if (!hasClusterIp(service)) return [];
    const ip = service.spec?.clusterIP ?? '';
    const prefix = envName(service.metadata?.name ?? '');
    const ports = service.spec?.ports ?? [];
    const vars: KeyValue[] = [{ key: `${prefix}_SERVICE_HOST`, value: ip }];
    // A service with a cluster IP has at least one port (API validation); guard anyway.
    const first = ports[0];
    if (first !== undefined) vars.push({ key: `${prefix}_SERVICE_PORT`, value: String(first.port) });
    for (const port of ports) {
      if (port.name !== undefined && port.name !== '') vars.push({ key: `${prefix}_SERVICE_PORT_${envName(port.name)}`, value: String(port.port) });
    }
    return [...vars, ...linkVariables(prefix, service, ip)];
  });
}

/** The service variables a pod's containers get (the kubelet's `getServiceEnvVarMap`). */
export function serviceEnvVars(services: readonly V1Service[], namespace: string, enableServiceLinks: boolean): KeyValue[] {
  return variablesOfServices(visibleServices(services, namespace, enableServiceLinks));
}
