/**
 * The agent's settings from flags, then environment, then defaults (util/flags.ts parses them).
 * Invalid values are reported as a `FlagError` naming the flag, before anything starts.
 */
import { parseUserNamespaceHostIds, type UserNamespaceHostIds } from './userns-flags.js';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { V1Taint } from '@kubernetes/client-node';
import { FlagError, formatUsage, LOG_LEVELS, oneOf, parseFlags, positiveInteger, secondsOrDuration, type FlagSpecs } from '../util/flags.js';
import { clusterDnsProblem, clusterDomainProblem } from '../reconcilers/dns/cluster-settings.js';
import { parseNodeLabels, parseTaints } from './registration-flags.js';
import { parseAllowedUnsafeSysctls, seccompProfileRoot } from './security-flags.js';
import { GC_FLAGS, parseGcFlags } from './gc-flags.js';
import { LOG_ROTATION_FLAGS, parseLogRotationFlags } from './log-rotation-flags.js';
import { NODE_POLICY_FLAGS, parseImagePullFlags, parseReservedFlag } from './node-policy-flags.js';
import { EVICTION_FLAGS, parseEvictionFlags } from './eviction-flags.js';
import { SHUTDOWN_FLAGS, parseShutdownFlags, type NodeShutdownSettings } from './shutdown-flags.js';
import { expandConfigFlag } from './kubelet-config.js';
import type { SentinelSettings } from '../controllers/queue/redis.js';
import { parseRedisTopology, type ClusterSettings } from '../controllers/queue/redis-cluster.js';
import { PULL_VERIFICATION_POLICIES, type PullVerificationPolicy } from '../reconcilers/images/pull-verification.js';
import { CGROUP_FLAGS, parseCgroupFlags, type CgroupSettings } from './cgroup-flags.js';
import { CREDENTIAL_FLAGS, certDirOf, parseCredentialFlags, type NodeCredentialSettings } from './credential-flags.js';
import { KUBE_API_FLAGS, parseKubeApiFlags } from './kube-api-flags.js';
import type { ApiRateLimits } from '../kube/rate-limit.js';
import type { ManifestUrlSettings } from '../controllers/pod-sources/url-source.js';
import type { EvictionConfig } from '../controllers/eviction/thresholds.js';
import type { GcSettings, ImagePullSettings, LogRotationSettings, ReservedResources } from '../controllers/nodeagent/settings.js';

export { FlagError } from '../util/flags.js';

export interface AgentSettings {
  /**
   * Path of a kubeconfig; in-cluster configuration when absent. With {@link credentials}, where the
   * node's own kubeconfig is written once its certificate is issued (as the kubelet's).
   */
  readonly kubeconfig: string | undefined;
  /** The node's own client certificate from a bootstrap credential (`--bootstrap-*`); undefined: `kubeconfig` as it is. */
  readonly credentials: NodeCredentialSettings | undefined;
  /** The node's certificates (`--cert-dir`, default `<root-dir>/pki`). */
  readonly certDir: string;
  /** The client-side rate limit of API requests (`--kube-api-qps`, `--kube-api-burst`; kube/rate-limit.ts). */
  readonly kubeApi: ApiRateLimits;
  readonly nodeName: string;
  /** The node's InternalIP; the first non-internal IPv4 address of the host when absent. */
  readonly nodeIp: string;
  readonly criEndpoint: string;
  readonly redisUrl: string;
  /**
   * `--redis-node-user`: authenticate to Redis as this node's own ACL user with a password kept
   * under the root dir, whose hash the Node carries (cmd/assembly/queue.ts).
   */
  readonly redisNodeUser: boolean;
  /** Reach Redis through these sentinels (`--redis-sentinels`); undefined: the URL's Redis. */
  readonly redisSentinel: SentinelSettings | undefined;
  /** Redis is a cluster found through these nodes (`--redis-cluster-nodes`); undefined: not a cluster. */
  readonly redisCluster: ClusterSettings | undefined;
  readonly rootDir: string;
  readonly podLogDir: string;
  /**
   * Where each started container gets its log link, `<pod>_<namespace>_<container>-<id>.log` → its
   * log file (`--container-log-link-dir`; the kubelet's fixed /var/log/containers).
   */
  readonly containerLogLinkDir: string;
  readonly logLevel: string;
  readonly concurrency: number;
  readonly maxPods: number;
  /** Host IDs for `hostUsers: false` pods (`--user-namespaces-host-ids`). */
  readonly userNamespaceHostIds: UserNamespaceHostIds;
  /** Period of the full resync that re-enqueues every pod (jittered by up to 10%). */
  readonly resyncPeriodMs: number;
  /** Labels the Node is registered with and keeps (`--node-labels`). */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** Taints the Node is created with (`--register-with-taints`); a node cannot change them later. */
  readonly registerWithTaints: readonly V1Taint[];
  /** Cluster DNS server IPs for ClusterFirst pods (`--cluster-dns`); empty: they fall back to Default. */
  readonly clusterDns: readonly string[];
  /** The cluster's DNS domain (`--cluster-domain`); empty leaves the cluster search domains out. */
  readonly clusterDomain: string;
  /** The host resolv.conf Default pods get (`--resolv-conf`); empty: the local resolver, no search. */
  readonly resolvConf: string;
  /** Sysctls (or patterns ending in `*`) pods may set beyond the safe ones (`--allowed-unsafe-sysctls`). */
  readonly allowedUnsafeSysctls: readonly string[];
  /** Where `Localhost` seccomp profiles are found (`--seccomp-profile-root`, default `<root-dir>/seccomp`). */
  readonly seccompProfileRoot: string;
  /** RuntimeDefault seccomp for containers that name no profile (`--seccomp-default`; off, as the kubelet's default). */
  readonly seccompDefault: boolean;
  /** The local health endpoint (`--healthz-port`, `--healthz-bind-address`); port 0: none. */
  readonly healthz: { readonly address: string; readonly port: number };
  /** The node server (logs; later exec, attach, port-forward): where it listens and how it authenticates. */
  readonly nodeServer: NodeServerSettings;
  /**
   * When a present image is pulled again with the pod's credentials before use
   * (`--image-pull-credentials-verification-policy`, the kubelet's imagePullCredentialsVerificationPolicy).
   */
  readonly imagePullCredentialsVerificationPolicy: PullVerificationPolicy;
  /**
   * Credential provider exec plugins (`--image-credential-provider-config`,
   * `--image-credential-provider-bin-dir`); undefined: none.
   */
  readonly imageCredentialProviders: ImageCredentialProviderSettings | undefined;
  /** The garbage collector's policy (`--image-gc-*`, `--minimum-container-ttl-duration`, …); the NodeAgent's `spec.gc` overrides it. */
  readonly gc: GcSettings;
  /** Container log rotation (`--container-log-max-size`, `--container-log-max-files`); the NodeAgent's `spec.logRotation` overrides it. */
  readonly logRotation: LogRotationSettings;
  /** The runtime's sandbox image (`--pod-infra-container-image`): image GC never removes it. */
  readonly sandboxImage: string;
  /** Resources held back from pods (`--system-reserved`, `--kube-reserved`); the NodeAgent's fields of the same names override them. */
  readonly systemReserved: ReservedResources;
  readonly kubeReserved: ReservedResources;
  /** Image pull concurrency and rate (`--serialize-image-pulls`, …); the NodeAgent's `spec.imagePulls` overrides them. */
  readonly imagePulls: ImagePullSettings;
  /** Eviction under node pressure (`--eviction-hard`, `--eviction-soft`, …); the NodeAgent's `spec.eviction` overrides it. */
  readonly eviction: EvictionConfig;
  /** Graceful node shutdown (`--shutdown-grace-period`, …; the KubeletConfiguration's `shutdownGracePeriod*`); all zero: off. */
  readonly shutdown: NodeShutdownSettings;
  /** Directory of static pod manifests (`--pod-manifest-path`, the kubelet's staticPodPath); none: no static pods. */
  readonly podManifestPath: string | undefined;
  /** Static pods served at a URL (`--manifest-url`, `--manifest-url-header`, `--http-check-frequency`); none: no URL source. */
  readonly manifestUrl: ManifestUrlSettings | undefined;
  /** Pod cgroups under the QoS hierarchy (`--cgroups-per-qos`, `--cgroup-root`, …); undefined: the runtime's default placement. */
  readonly cgroups: CgroupSettings | undefined;
}

/** `--node-server-port`, `--tls-cert-file`, `--tls-private-key-file`, `--rotate-server-certificates`, `--client-ca-file`, `--node-log-dir`, `--enable-system-log-query`. */
export interface NodeServerSettings {
  /** On the node's InternalIP; advertised in the Node's `daemonEndpoints`. */
  readonly port: number;
  /** Both or neither: absent, a self-signed certificate kept under the root dir is served. */
  readonly tlsCertFile: string | undefined;
  readonly tlsPrivateKeyFile: string | undefined;
  /** `--rotate-server-certificates`: the certificate comes from the CSR API (server/serving-cert-manager.ts) instead. */
  readonly rotateServerCertificates: boolean;
  /** CA bundle client certificates are verified against; absent: only bearer tokens authenticate. */
  readonly clientCaFile: string | undefined;
  /** The directory served at `/logs/` (the kubelet's /var/log, not a flag of the kubelet's). */
  readonly logDir: string;
  /** `/logs/?query=…` answers the node log query (KubeletConfiguration `enableSystemLogQuery`); off: the query string is ignored. */
  readonly enableSystemLogQuery: boolean;
}

/** The agent's flags: one declaration for parsing and for the usage text. */
const FLAGS = {
  kubeconfig: { type: 'string', value: 'PATH', env: 'KUBECONFIG', defaultText: 'in-cluster config', description: 'kubeconfig to reach the API server' },
  config: { type: 'string', value: 'FILE', defaultText: 'none', description: 'a kubelet.config.k8s.io/v1beta1 KubeletConfiguration; its fields are the defaults of the flags of the same meaning (flags win), a field nodelet cannot honour stops the agent (docs/kubelet-config.md)' },
  'node-name': { type: 'string', value: 'NAME', env: 'NODE_NAME', defaultText: 'the host name', description: 'name of the Node to register' },
  'node-ip': { type: 'string', value: 'IP', env: 'NODE_IP', defaultText: "the host's first IPv4 address", description: "the node's InternalIP" },
  'cri-endpoint': { type: 'string', value: 'URL', env: 'CONTAINER_RUNTIME_ENDPOINT', description: 'CRI runtime socket, unix:///path (required)' },
  'redis-url': { type: 'string', value: 'URL', env: 'REDIS_URL', default: 'redis://127.0.0.1:6379', description: 'Redis for the work queue' },
  'redis-node-user': { type: 'boolean', description: "authenticate to Redis as this node's own user (nodelet-node-<node>), provisioned by `nodelet redis-users` from the hash on the Node" },
  'redis-sentinels': { type: 'string', value: 'HOST:PORT,...', env: 'REDIS_SENTINELS', default: '', description: "Redis Sentinels naming the queue's master (then --redis-url gives only password and db)" },
  'redis-sentinel-master': { type: 'string', value: 'NAME', env: 'REDIS_SENTINEL_MASTER', default: 'mymaster', description: 'the master name the sentinels know' },
  'redis-cluster-nodes': { type: 'string', value: 'HOST:PORT,...', env: 'REDIS_CLUSTER_NODES', default: '', description: "some nodes of a Redis Cluster holding the queues (then --redis-url gives only user, password and rediss://)" },
  'root-dir': { type: 'string', value: 'DIR', env: 'NODELET_ROOT_DIR', default: '/var/lib/nodelet', description: 'pod data root' },
  'pod-log-dir': { type: 'string', value: 'DIR', default: '/var/log/pods', description: 'container logs root' },
  // The kubelet's is fixed; a host with a kubelet and nodelet may share it (GC leaves the kubelet's links alone) or not.
  'container-log-link-dir': { type: 'string', value: 'DIR', default: '/var/log/containers', description: "directory of the containers' log links (<pod>_<namespace>_<container>-<id>.log), which log collectors read" },
  'log-level': { type: 'string', value: 'LEVEL', env: 'LOG_LEVEL', default: 'info', description: 'trace|debug|info|warn|error' },
  concurrency: { type: 'string', value: 'N', env: 'NODELET_CONCURRENCY', default: '4', description: 'pods reconciled at once' },
  'max-pods': { type: 'string', value: 'N', default: '110', description: 'pods the node advertises' },
  'user-namespaces-host-ids': { type: 'string', value: 'FIRST:LENGTH|none', default: '', defaultText: "the user kubelet's subordinate IDs (getsubids), else every ID from 65536", description: 'host IDs for hostUsers: false pods, 65536 per pod' },
  'resync-period': { type: 'string', value: 'SECONDS', default: '60', description: 'full resync period' },
  'node-labels': { type: 'string', value: 'K=V,...', default: '', description: 'labels the Node is registered with and keeps' },
  'register-with-taints': {
    type: 'string',
    value: 'K=V:EFFECT,...',
    default: '',
    description: 'taints the Node is created with (e.g. nodelet.dev/agent=true:NoSchedule)',
  },
  // As the kubelet's flags of the same names (the NodeAgent's clusterDNS/clusterDomain override the first two).
  'cluster-dns': { type: 'string', value: 'IP,...', default: '', description: 'cluster DNS server IPs for ClusterFirst pods (none: they fall back to Default)' },
  'cluster-domain': { type: 'string', value: 'DOMAIN', default: 'cluster.local', description: "the cluster's DNS domain, searched by ClusterFirst pods" },
  'resolv-conf': { type: 'string', value: 'PATH', default: '/etc/resolv.conf', description: "resolver config Default pods get ('' for none)" },
  'allowed-unsafe-sysctls': { type: 'string', value: 'NAME,...', default: '', description: 'unsafe sysctls (or patterns ending in *) pods may set' },
  'seccomp-profile-root': { type: 'string', value: 'DIR', defaultText: '<root-dir>/seccomp', description: 'directory of Localhost seccomp profiles' },
  'seccomp-default': { type: 'boolean', description: 'RuntimeDefault seccomp for containers without a profile' },
  // As the kubelet's flags of the same names.
  'node-server-port': { type: 'string', value: 'PORT', default: '10250', description: "the node server's HTTPS port, on the node IP (logs)" },
  'tls-cert-file': { type: 'string', value: 'PATH', defaultText: 'self-signed, kept in <root-dir>/pki', description: "the node server's certificate (with --tls-private-key-file)" },
  'tls-private-key-file': { type: 'string', value: 'PATH', description: "the node server's private key" },
  'rotate-server-certificates': { type: 'boolean', description: "request the node server's certificate through the CertificateSigningRequest API (kubelet-serving signer) and rotate it; an operator approves the requests" },
  'client-ca-file': { type: 'string', value: 'PATH', defaultText: 'none: bearer tokens only', description: 'CA bundle for client certificates of the node server' },
  // As the kubelet's flags of the same names and defaults.
  'healthz-port': { type: 'string', value: 'PORT', default: '10248', description: 'port of the local /healthz and /readyz (plain HTTP; 0: none)' },
  'healthz-bind-address': { type: 'string', value: 'IP', default: '127.0.0.1', description: 'address of the local /healthz and /readyz' },
  // The kubelet's configuration field (KubeletEnsureSecretPulledImages, on by default since 1.35).
  'image-pull-credentials-verification-policy': {
    type: 'string',
    value: 'POLICY',
    default: 'NeverVerifyPreloadedImages',
    description: 'NeverVerify, NeverVerifyPreloadedImages or AlwaysVerify: when a pod must pull a present image with its own credentials',
  },
  'image-credential-provider-config': { type: 'string', value: 'PATH', defaultText: 'none', description: 'CredentialProviderConfig file, or a directory of them, naming exec plugins that give registry credentials (with --image-credential-provider-bin-dir)' },
  'image-credential-provider-bin-dir': { type: 'string', value: 'DIR', defaultText: 'none', description: "directory of the credential provider plugins' executables" },
  'node-log-dir': { type: 'string', value: 'DIR', default: '/var/log', description: "the node's log directory, served read-only at the node server's /logs/" },
  'enable-system-log-query': { type: 'boolean', description: "answer the node log query at /logs/?query=NAME (a service's log looked for as a file under --node-log-dir, or a file there), as the kubelet's enableSystemLogQuery" },
  'pod-manifest-path': { type: 'string', value: 'DIR', defaultText: 'none: no static pods', description: 'directory of static pod manifests (*.yaml, *.yml, *.json), re-read every 20 s and on change' },
  'manifest-url': { type: 'string', value: 'URL', defaultText: 'none', description: 'URL whose body (a Pod or a PodList) lists more static pods, polled every --http-check-frequency' },
  'manifest-url-header': { type: 'string', value: 'NAME:VALUE,...', default: '', repeatable: true, description: 'headers sent to --manifest-url (repeatable; a name may repeat)' },
  'http-check-frequency': { type: 'string', value: 'DURATION', default: '20', description: 'period of the --manifest-url GET' },
  ...GC_FLAGS,
  ...LOG_ROTATION_FLAGS,
  ...NODE_POLICY_FLAGS,
  ...EVICTION_FLAGS,
  ...SHUTDOWN_FLAGS,
  ...CGROUP_FLAGS,
  ...CREDENTIAL_FLAGS,
  ...KUBE_API_FLAGS,
} as const satisfies FlagSpecs;

export const USAGE = formatUsage(FLAGS, {
  synopsis: 'nodelet [agent] [flags]',
  summary: 'Runs the node agent: registers the Node, runs the pods bound to it through the CRI runtime.',
});

/** The host's first non-internal IPv4 address. */
function defaultNodeIp(): string {
  for (const addresses of Object.values(os.networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found !== undefined) return found.address;
  }
  return '127.0.0.1';
}

/** `--cluster-dns`: comma-separated IPs. */
function parseClusterDns(raw: string): string[] {
  const servers = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const problem = clusterDnsProblem(servers);
  if (problem !== undefined) throw new FlagError(`--cluster-dns: ${problem}`);
  return servers;
}

function parseClusterDomain(raw: string): string {
  const domain = raw.trim().replace(/\.$/, '');
  const problem = clusterDomainProblem(domain);
  if (problem !== undefined) throw new FlagError(`--cluster-domain: ${problem}`);
  return domain;
}

/** `'a:hello,b:again'`: name/value pairs split at the first colon, in order. */
function parseManifestUrl(values: { 'manifest-url': string | undefined; 'manifest-url-header': string; 'http-check-frequency': string }): ManifestUrlSettings | undefined {
  const url = optionalPath(values['manifest-url']);
  const periodMs = secondsOrDuration('http-check-frequency', values['http-check-frequency'], 86400) * 1000;
  if (periodMs === 0) throw new FlagError('--http-check-frequency must be at least 1s');
  const headers = values['manifest-url-header'].split(',').filter((h) => h.trim() !== '').map((h): [string, string] => {
    const colon = h.indexOf(':');
    if (colon <= 0) throw new FlagError(`--manifest-url-header: "${h}" is not NAME:VALUE`);
    return [h.slice(0, colon).trim(), h.slice(colon + 1)];
  });
  if (url === undefined) return undefined;
  if (!/^https?:\/\//.test(url)) throw new FlagError(`--manifest-url must be an http(s) URL, got "${url}"`);
  return { url, headers, periodMs };
}

function optionalPath(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : raw;
}

function parseNodeServer(values: {
  'node-server-port': string;
  'tls-cert-file': string | undefined;
  'tls-private-key-file': string | undefined;
  'client-ca-file': string | undefined;
  'node-log-dir': string;
  'rotate-server-certificates'?: boolean;
  'enable-system-log-query'?: boolean;
}): NodeServerSettings {
  const port = positiveInteger('node-server-port', values['node-server-port']);
  if (port > 65535) throw new FlagError(`--node-server-port must be at most 65535, got "${values['node-server-port']}"`);
  const tlsCertFile = optionalPath(values['tls-cert-file']);
  const tlsPrivateKeyFile = optionalPath(values['tls-private-key-file']);
  if ((tlsCertFile === undefined) !== (tlsPrivateKeyFile === undefined)) throw new FlagError('--tls-cert-file and --tls-private-key-file go together');
  const rotateServerCertificates = values['rotate-server-certificates'] === true;
  // The kubelet ignores the files when it requests its certificate; saying so beats a silent choice.
  if (rotateServerCertificates && tlsCertFile !== undefined) throw new FlagError('--rotate-server-certificates and --tls-cert-file exclude each other');
  const logDir = values['node-log-dir'];
  if (!path.isAbsolute(logDir)) throw new FlagError(`--node-log-dir must be an absolute path, got "${logDir}"`);
  const enableSystemLogQuery = values['enable-system-log-query'] === true;
  return { port, tlsCertFile, tlsPrivateKeyFile, rotateServerCertificates, clientCaFile: optionalPath(values['client-ca-file']), logDir, enableSystemLogQuery };
}

/**
 * `--container-log-link-dir`: absolute (a link's target is read from the host's root by log
 * collectors; the directory is the agent's own), and not inside the pod log directory, whose
 * entries GC and rotation own.
 * @throws FlagError otherwise.
 */
function parseLogLinkDir(raw: string, podLogDir: string): string {
  if (!path.isAbsolute(raw)) throw new FlagError(`--container-log-link-dir must be an absolute path, got "${raw}"`);
  const dir = path.resolve(raw);
  const relative = path.relative(path.resolve(podLogDir), dir);
  if (relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))) throw new FlagError(`--container-log-link-dir must not be --pod-log-dir or inside it, got "${raw}"`);
  return dir;
}

/** Where the credential provider plugins are configured and live. */
export interface ImageCredentialProviderSettings {
  readonly configPath: string;
  readonly binDir: string;
}

/** Both credential provider flags, or neither (the kubelet refuses a config without a bin dir). */
function parseImageCredentialProviders(configPath: string | undefined, binDir: string | undefined): ImageCredentialProviderSettings | undefined {
  const config = optionalPath(configPath);
  const bin = optionalPath(binDir);
  if (config === undefined && bin === undefined) return undefined;
  if (config === undefined || bin === undefined) throw new FlagError('--image-credential-provider-config and --image-credential-provider-bin-dir must be given together');
  return { configPath: config, binDir: bin };
}

/** `--image-pull-credentials-verification-policy`; the allowlist policy is refused: nodelet has no allowlist. */
function parsePullVerificationPolicy(raw: string): PullVerificationPolicy {
  const policy = PULL_VERIFICATION_POLICIES.find((p) => p === raw);
  if (policy !== undefined) return policy;
  const why = raw === 'NeverVerifyAllowlistedImages' ? ' (its preloadedImagesVerificationAllowlist is not supported by nodelet)' : '';
  throw new FlagError(`--image-pull-credentials-verification-policy must be one of ${PULL_VERIFICATION_POLICIES.join(', ')}, got "${raw}"${why}`);
}

/** `--healthz-bind-address` and `--healthz-port`. @throws FlagError on a port out of range or an address that is not an IP. */
function parseHealthz(address: string, rawPort: string): { address: string; port: number } {
  if (!/^\d+$/.test(rawPort) || Number(rawPort) > 65535) throw new FlagError(`--healthz-port must be a port from 0 to 65535, got "${rawPort}"`);
  if (isIP(address) === 0) throw new FlagError(`--healthz-bind-address must be an IP address, got "${address}"`);
  return { address, port: Number(rawPort) };
}

/**
 * `--redis-sentinels`, `--redis-sentinel-master`, `--redis-cluster-nodes` and `--redis-node-user`
 * as settings. Node users are refused on a cluster: ACL users live in each Redis process, and
 * `nodelet redis-users` keeps them on one.
 */
export function parseRedisFlags(flags: { sentinels: string; masterName: string; clusterNodes: string; nodeUser: boolean }): Pick<AgentSettings, 'redisSentinel' | 'redisCluster' | 'redisNodeUser'> {
  let topology: ReturnType<typeof parseRedisTopology>;
  try {
    topology = parseRedisTopology(flags);
  } catch (error) {
    if (error instanceof RangeError) throw new FlagError(error.message);
    throw error;
  }
  if (flags.nodeUser && topology.cluster !== undefined) throw new FlagError('--redis-node-user is not offered on a Redis Cluster (its ACL users are per cluster node, and `nodelet redis-users` provisions one Redis)');
  return { redisSentinel: topology.sentinel, redisCluster: topology.cluster, redisNodeUser: flags.nodeUser };
}

/**
 * Parses argv (without node and script) and the environment into settings.
 * @throws FlagError on an unknown flag, a bad value or a missing CRI endpoint.
 */
export function parseSettings(argv: readonly string[], env: NodeJS.ProcessEnv): AgentSettings | 'help' {
  // A KubeletConfiguration's fields are read first; the command line's flags win over them.
  const values = parseFlags(FLAGS, { argv: expandConfigFlag(argv), env, allowPositionals: true });
  if (values === 'help') return 'help';
  const criEndpoint = values['cri-endpoint'] ?? '';
  if (criEndpoint === '') throw new FlagError('--cri-endpoint (or CONTAINER_RUNTIME_ENDPOINT) is required');
  // An explicitly empty --kubeconfig or --node-ip means the default too.
  const kubeconfig = values.kubeconfig ?? '';
  const nodeIp = values['node-ip'] ?? '';
  return {
    kubeconfig: kubeconfig === '' ? undefined : kubeconfig,
    credentials: parseCredentialFlags(values),
    certDir: certDirOf(values),
    kubeApi: parseKubeApiFlags(values),
    nodeName: (values['node-name'] ?? os.hostname()).toLowerCase(),
    nodeIp: nodeIp === '' ? defaultNodeIp() : nodeIp,
    criEndpoint,
    redisUrl: values['redis-url'],
    ...parseRedisFlags({ sentinels: values['redis-sentinels'], masterName: values['redis-sentinel-master'], clusterNodes: values['redis-cluster-nodes'], nodeUser: values['redis-node-user'] }),
    rootDir: values['root-dir'],
    podLogDir: values['pod-log-dir'],
    containerLogLinkDir: parseLogLinkDir(values['container-log-link-dir'], values['pod-log-dir']),
    logLevel: oneOf('log-level', values['log-level'], LOG_LEVELS),
    concurrency: positiveInteger('concurrency', values.concurrency),
    maxPods: positiveInteger('max-pods', values['max-pods']),
    userNamespaceHostIds: parseUserNamespaceHostIds(values['user-namespaces-host-ids']),
    resyncPeriodMs: positiveInteger('resync-period', values['resync-period']) * 1000,
    nodeLabels: parseNodeLabels(values['node-labels']),
    registerWithTaints: parseTaints(values['register-with-taints']),
    clusterDns: parseClusterDns(values['cluster-dns']),
    clusterDomain: parseClusterDomain(values['cluster-domain']),
    resolvConf: values['resolv-conf'],
    allowedUnsafeSysctls: parseAllowedUnsafeSysctls(values['allowed-unsafe-sysctls']),
    seccompProfileRoot: seccompProfileRoot(values['seccomp-profile-root'], values['root-dir']),
    seccompDefault: values['seccomp-default'],
    imagePullCredentialsVerificationPolicy: parsePullVerificationPolicy(values['image-pull-credentials-verification-policy']),
    imageCredentialProviders: parseImageCredentialProviders(values['image-credential-provider-config'], values['image-credential-provider-bin-dir']),
    healthz: parseHealthz(values['healthz-bind-address'], values['healthz-port']),
    nodeServer: parseNodeServer(values),
    gc: parseGcFlags(values),
    logRotation: parseLogRotationFlags(values),
    sandboxImage: values['pod-infra-container-image'],
    podManifestPath: optionalPath(values['pod-manifest-path']),
    manifestUrl: parseManifestUrl(values),
    systemReserved: parseReservedFlag('system-reserved', values['system-reserved']),
    kubeReserved: parseReservedFlag('kube-reserved', values['kube-reserved']),
    imagePulls: parseImagePullFlags(values),
    eviction: parseEvictionFlags(values),
    shutdown: parseShutdownFlags(values),
    cgroups: parseCgroupFlags(values),
  };
}
