/**
 * `--config FILE`: a `kubelet.config.k8s.io/v1beta1` KubeletConfiguration, read as the kubelet
 * reads it: its fields are the base, and flags given on the command line win over them.
 *
 * Each field nodelet honours becomes the flag of the same meaning (in the kubelet's syntax, which
 * those flags take); a few the agent has no use for are accepted because nothing depends on them
 * on a nodelet node (listed in {@link NO_EFFECT} with why); every other field, and a supported one
 * with a value nodelet cannot honour, stops the agent with a message naming them. Nothing in the
 * file is silently ignored.
 */
import { readFileSync } from 'node:fs';
import { load as loadYaml } from 'js-yaml';
import { FlagError } from '../util/flags.js';
import { InvalidGoDurationError, parseGoDurationMs } from '../util/go-duration.js';
import { DEFAULT_ONLY_FIELDS, isZeroValue, ZERO_IS_DEFAULT } from './kubelet-config-defaults.js';

const API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** A field the file sets that nodelet cannot honour, with why. */
export class KubeletConfigError extends FlagError {
  override readonly name = 'KubeletConfigError';
}

type Value = unknown;
/** The flags one field becomes (`--name=value` each), or a refusal reason. */
type Translation = { readonly args: readonly string[] } | { readonly refused: string };

const arg = (flag: string, value: string | number | boolean): Translation => ({ args: [`--${flag}=${String(value)}`] });
const refuse = (reason: string): Translation => ({ refused: reason });

/** A value of the file for a message: scalars as they are, anything else as JSON. */
function shown(value: Value): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

function isRecord(value: Value): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringList(field: string, value: Value): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new KubeletConfigError(`--config: ${field} must be a list of strings`);
  return value;
}

function scalar(field: string, value: Value): string | number | boolean {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  throw new KubeletConfigError(`--config: ${field} must be a string, a number or a boolean`);
}

/** `{a: x, b: y}` as `a<sep>x,b<sep>y` (sorted, as the kubelet's map flags print). */
function mapArg(field: string, value: Value, sep: string): string {
  if (!isRecord(value)) throw new KubeletConfigError(`--config: ${field} must be a map`);
  return Object.entries(value)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}${sep}${String(scalar(`${field}.${k}`, v))}`)
    .join(',');
}

function taintsArg(value: Value): Translation {
  if (!Array.isArray(value)) throw new KubeletConfigError('--config: registerWithTaints must be a list');
  const taints = value.map((t: Value) => {
    if (!isRecord(t)) throw new KubeletConfigError('--config: registerWithTaints entries must be maps');
    const { key, value: v, effect } = t;
    return `${shown(key)}${v === undefined || v === '' ? '' : `=${shown(v)}`}:${shown(effect)}`;
  });
  return arg('register-with-taints', taints.join(','));
}

function headersArgs(value: Value): Translation {
  if (!isRecord(value)) throw new KubeletConfigError('--config: staticPodURLHeader must be a map of lists');
  return { args: Object.entries(value).flatMap(([name, values]) => stringList(`staticPodURLHeader.${name}`, values).map((v) => `--manifest-url-header=${name}:${v}`)) };
}

/** The keys of `value` not in `known`, as `prefix.key` (a nested field nodelet does not read). */
function unknownKeys(prefix: string, value: Record<string, unknown>, known: readonly string[]): string[] {
  return Object.keys(value).filter((k) => !known.includes(k)).map((k) => `${prefix}.${k}`);
}

/** A Go duration field of a map: absent or at `ms`, or a refusal naming it. */
function defaultDuration(path: string, value: unknown, ms: number): string[] {
  if (value === undefined) return [];
  try {
    // Zero is the default too: the kubelet's defaulting replaces it.
    const got = typeof value === 'string' ? parseGoDurationMs(value) : undefined;
    return got === ms || got === 0 ? [] : [`${path}: ${shown(value)} (only the kubelet's default)`];
  } catch (error) {
    if (!(error instanceof InvalidGoDurationError)) throw error;
    return [`${path}: ${shown(value)} (not a duration)`];
  }
}

/** authentication: only client certificates and webhook token review, anonymous off, as the node server does. */
function authenticationArgs(value: Value): Translation {
  if (!isRecord(value)) throw new KubeletConfigError('--config: authentication must be a map');
  const anonymous = isRecord(value.anonymous) ? value.anonymous : {};
  const webhook = isRecord(value.webhook) ? value.webhook : {};
  const x509 = isRecord(value.x509) ? value.x509 : {};
  const problems = [
    ...unknownKeys('authentication', value, ['anonymous', 'webhook', 'x509']),
    ...unknownKeys('authentication.anonymous', anonymous, ['enabled']),
    ...unknownKeys('authentication.webhook', webhook, ['enabled', 'cacheTTL']),
    ...unknownKeys('authentication.x509', x509, ['clientCAFile']),
    ...(anonymous.enabled === true ? ['authentication.anonymous.enabled: true (the node server never serves anonymous requests)'] : []),
    ...(webhook.enabled === false ? ['authentication.webhook.enabled: false (the node server always reviews bearer tokens)'] : []),
    // The node server keeps a token's review for 2 min, the kubelet's default.
    ...defaultDuration('authentication.webhook.cacheTTL', webhook.cacheTTL, 120_000),
  ];
  if (problems.length > 0) return refuse(problems.join('; '));
  const ca = x509.clientCAFile;
  return { args: typeof ca === 'string' && ca !== '' ? [`--client-ca-file=${ca}`] : [] };
}

function authorizationArgs(value: Value): Translation {
  const config = isRecord(value) ? value : {};
  const webhook = isRecord(config.webhook) ? config.webhook : {};
  const mode = config.mode;
  const problems = [
    ...unknownKeys('authorization', config, ['mode', 'webhook']),
    ...unknownKeys('authorization.webhook', webhook, ['cacheAuthorizedTTL', 'cacheUnauthorizedTTL']),
    ...(mode === undefined || mode === 'Webhook' ? [] : [`authorization.mode: ${shown(mode)} (the node server authorizes by SubjectAccessReview, Webhook)`]),
    // The node server keeps an allowed review 5 min and a denied one 30 s, the kubelet's defaults.
    ...defaultDuration('authorization.webhook.cacheAuthorizedTTL', webhook.cacheAuthorizedTTL, 300_000),
    ...defaultDuration('authorization.webhook.cacheUnauthorizedTTL', webhook.cacheUnauthorizedTTL, 30_000),
  ];
  return problems.length === 0 ? { args: [] } : refuse(problems.join('; '));
}

/** `[{priority, shutdownGracePeriodSeconds}]` as `PRIORITY=SECONDS,…`. */
function shutdownGroupsArg(value: Value): Translation {
  if (!Array.isArray(value)) throw new KubeletConfigError('--config: shutdownGracePeriodByPodPriority must be a list');
  const groups = value.map((group: Value, i) => {
    const path = `shutdownGracePeriodByPodPriority[${i}]`;
    if (!isRecord(group)) throw new KubeletConfigError(`--config: ${path} must be a map`);
    const unknown = unknownKeys(path, group, ['priority', 'shutdownGracePeriodSeconds']);
    if (unknown.length > 0) throw new KubeletConfigError(`--config: fields nodelet does not support: ${unknown.join(', ')}`);
    const { priority = 0, shutdownGracePeriodSeconds = 0 } = group;
    if (typeof priority !== 'number' || typeof shutdownGracePeriodSeconds !== 'number') throw new KubeletConfigError(`--config: ${path} needs numbers`);
    return `${priority}=${shutdownGracePeriodSeconds}`;
  });
  return groups.length === 0 ? { args: [] } : arg('shutdown-grace-period-by-pod-priority', groups.join(','));
}

/** Fields that become flags. */
const FLAG_FIELDS: Readonly<Record<string, (value: Value) => Translation>> = {
  containerRuntimeEndpoint: (v) => arg('cri-endpoint', scalar('containerRuntimeEndpoint', v)),
  maxPods: (v) => arg('max-pods', scalar('maxPods', v)),
  clusterDNS: (v) => arg('cluster-dns', stringList('clusterDNS', v).join(',')),
  clusterDomain: (v) => arg('cluster-domain', scalar('clusterDomain', v)),
  resolvConf: (v) => arg('resolv-conf', scalar('resolvConf', v)),
  allowedUnsafeSysctls: (v) => arg('allowed-unsafe-sysctls', stringList('allowedUnsafeSysctls', v).join(',')),
  seccompDefault: (v) => arg('seccomp-default', scalar('seccompDefault', v)),
  port: (v) => arg('node-server-port', scalar('port', v)),
  tlsCertFile: (v) => arg('tls-cert-file', scalar('tlsCertFile', v)),
  tlsPrivateKeyFile: (v) => arg('tls-private-key-file', scalar('tlsPrivateKeyFile', v)),
  serverTLSBootstrap: (v) => arg('rotate-server-certificates', scalar('serverTLSBootstrap', v)),
  rotateCertificates: (v) => arg('rotate-certificates', scalar('rotateCertificates', v)),
  authentication: authenticationArgs,
  authorization: authorizationArgs,
  healthzPort: (v) => arg('healthz-port', scalar('healthzPort', v)),
  healthzBindAddress: (v) => arg('healthz-bind-address', scalar('healthzBindAddress', v)),
  registerWithTaints: taintsArg,
  staticPodPath: (v) => arg('pod-manifest-path', scalar('staticPodPath', v)),
  staticPodURL: (v) => arg('manifest-url', scalar('staticPodURL', v)),
  staticPodURLHeader: headersArgs,
  httpCheckFrequency: (v) => arg('http-check-frequency', scalar('httpCheckFrequency', v)),
  podLogsDir: (v) => arg('pod-log-dir', scalar('podLogsDir', v)),
  systemReserved: (v) => arg('system-reserved', mapArg('systemReserved', v, '=')),
  kubeReserved: (v) => arg('kube-reserved', mapArg('kubeReserved', v, '=')),
  serializeImagePulls: (v) => arg('serialize-image-pulls', scalar('serializeImagePulls', v)),
  maxParallelImagePulls: (v) => arg('max-parallel-image-pulls', scalar('maxParallelImagePulls', v)),
  registryPullQPS: (v) => arg('registry-qps', scalar('registryPullQPS', v)),
  registryBurst: (v) => arg('registry-burst', scalar('registryBurst', v)),
  kubeAPIQPS: (v) => arg('kube-api-qps', scalar('kubeAPIQPS', v)),
  kubeAPIBurst: (v) => arg('kube-api-burst', scalar('kubeAPIBurst', v)),
  evictionHard: (v) => arg('eviction-hard', mapArg('evictionHard', v, '<')),
  evictionSoft: (v) => arg('eviction-soft', mapArg('evictionSoft', v, '<')),
  evictionSoftGracePeriod: (v) => arg('eviction-soft-grace-period', mapArg('evictionSoftGracePeriod', v, '=')),
  evictionMinimumReclaim: (v) => arg('eviction-minimum-reclaim', mapArg('evictionMinimumReclaim', v, '=')),
  evictionPressureTransitionPeriod: (v) => arg('eviction-pressure-transition-period', scalar('evictionPressureTransitionPeriod', v)),
  evictionMaxPodGracePeriod: (v) => arg('eviction-max-pod-grace-period', scalar('evictionMaxPodGracePeriod', v)),
  imageGCHighThresholdPercent: (v) => arg('image-gc-high-threshold', scalar('imageGCHighThresholdPercent', v)),
  imageGCLowThresholdPercent: (v) => arg('image-gc-low-threshold', scalar('imageGCLowThresholdPercent', v)),
  imageMinimumGCAge: (v) => arg('image-minimum-gc-age', scalar('imageMinimumGCAge', v)),
  imageMaximumGCAge: (v) => arg('image-maximum-gc-age', scalar('imageMaximumGCAge', v)),
  containerLogMaxSize: (v) => arg('container-log-max-size', scalar('containerLogMaxSize', v)),
  containerLogMaxFiles: (v) => arg('container-log-max-files', scalar('containerLogMaxFiles', v)),
  cgroupsPerQOS: (v) => arg('cgroups-per-qos', scalar('cgroupsPerQOS', v)),
  cgroupRoot: (v) => arg('cgroup-root', scalar('cgroupRoot', v)),
  podPidsLimit: (v) => arg('pod-max-pids', scalar('podPidsLimit', v)),
  cpuCFSQuota: (v) => arg('cpu-cfs-quota', scalar('cpuCFSQuota', v)),
  imagePullCredentialsVerificationPolicy: (v) => arg('image-pull-credentials-verification-policy', scalar('imagePullCredentialsVerificationPolicy', v)),
  shutdownGracePeriod: (v) => arg('shutdown-grace-period', scalar('shutdownGracePeriod', v)),
  shutdownGracePeriodCriticalPods: (v) => arg('shutdown-grace-period-critical-pods', scalar('shutdownGracePeriodCriticalPods', v)),
  shutdownGracePeriodByPodPriority: shutdownGroupsArg,
  enableSystemLogQuery: (v) => arg('enable-system-log-query', scalar('enableSystemLogQuery', v)),
  readOnlyPort: (v) => (v === 0 ? { args: [] } : refuse(`readOnlyPort: ${String(v)} (nodelet serves no unauthenticated read-only port)`)),
};

/** Fields accepted although nodelet does nothing with them, and why nothing is lost. */
export const NO_EFFECT: Readonly<Record<string, string>> = {
  apiVersion: 'the file format',
  kind: 'the file format',
  address: "the node server listens on the node's IP (--node-ip)",
  cgroupDriver: 'the driver is the one the runtime reports (CRI RuntimeConfig), as the kubelet 1.37 takes it',
  failSwapOn: 'nodelet does not check swap at start',
  failCgroupV1: 'nodelet runs on cgroup v1 and v2 alike',
  makeIPTablesUtilChains: 'nodelet adds no iptables rules',
  volumePluginDir: 'nodelet runs no FlexVolume drivers; such volumes fail with FailedMount',
  imageServiceEndpoint: 'checked: it must be the runtime endpoint',
};

function imageServiceCheck(config: Record<string, unknown>): string | undefined {
  const images = config.imageServiceEndpoint;
  if (images === undefined || images === '' || images === config.containerRuntimeEndpoint) return undefined;
  return `imageServiceEndpoint: ${shown(images)} (images are served by the runtime endpoint)`;
}

/** Reads the YAML text of a KubeletConfiguration. @throws KubeletConfigError */
export function parseKubeletConfig(text: string, file: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (error) {
    throw new KubeletConfigError(`--config ${file}: not YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isRecord(doc) || doc.kind !== 'KubeletConfiguration' || doc.apiVersion !== API_VERSION) {
    throw new KubeletConfigError(`--config ${file}: not a ${API_VERSION} KubeletConfiguration`);
  }
  return doc;
}

/**
 * The flags a KubeletConfiguration stands for, in order, to be read before the command line's.
 * @throws KubeletConfigError naming every field nodelet cannot honour.
 */
export function kubeletConfigFlags(config: Record<string, unknown>, file: string): string[] {
  const args: string[] = [];
  const refused: string[] = [];
  const unknown: string[] = [];
  for (const [field, value] of Object.entries(config)) {
    const translate = FLAG_FIELDS[field];
    // kubeadm writes `0s` and `""` for "the kubelet's default", which is the flag's.
    if (translate !== undefined && ZERO_IS_DEFAULT.has(field) && isZeroValue(value)) continue;
    if (translate === undefined) {
      const defaultOnly = DEFAULT_ONLY_FIELDS[field];
      if (defaultOnly !== undefined && !defaultOnly.isDefault(value)) refused.push(`${field}: ${shown(value)} (only the kubelet's default: ${defaultOnly.why})`);
      else if (defaultOnly === undefined && NO_EFFECT[field] === undefined) unknown.push(field);
      continue;
    }
    const translation = translate(value);
    if ('refused' in translation) refused.push(translation.refused);
    else args.push(...translation.args);
  }
  const images = imageServiceCheck(config);
  if (images !== undefined) refused.push(images);
  if (unknown.length > 0) refused.push(`fields nodelet does not support: ${unknown.sort().join(', ')}`);
  if (refused.length > 0) throw new KubeletConfigError(`--config ${file}: ${refused.join('; ')}`);
  return args;
}

/** The flag name of a `--name` or `--name=value` argument. */
function flagName(arg: string): string | undefined {
  const match = /^--([^=]+)/.exec(arg);
  return match?.[1];
}

/**
 * The command line with `--config FILE` replaced by the file's flags, placed first so a flag given
 * on the command line wins (a repeatable one replaces the file's values rather than adding to them).
 */
export function expandConfigFlag(argv: readonly string[], read: (file: string) => string = (file) => readFileSync(file, 'utf8')): string[] {
  const at = argv.findIndex((a) => a === '--config' || a.startsWith('--config='));
  if (at === -1) return [...argv];
  const given = argv[at] ?? '';
  const file = given.includes('=') ? given.slice('--config='.length) : argv[at + 1];
  if (file === undefined || file === '') throw new KubeletConfigError('--config needs a file');
  const rest = [...argv.slice(0, at), ...argv.slice(at + (given.includes('=') ? 1 : 2))];
  let text: string;
  try {
    text = read(file);
  } catch (error) {
    throw new KubeletConfigError(`--config ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const explicit = new Set(rest.map(flagName).filter((n): n is string => n !== undefined));
  const fromFile = kubeletConfigFlags(parseKubeletConfig(text, file), file).filter((a) => !explicit.has(flagName(a) ?? ''));
  return [...fromFile, ...rest];
}
