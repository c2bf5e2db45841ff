/**
 * A container's environment as the kubelet builds it (`makeEnvironmentVariables`): the service
 * variables (`service-env.ts`), then `envFrom` sources, then `env` entries in order (later wins),
 * each value expanded against the variables defined before it (service variables included). Until
 * the node has listed the services once, no environment is built: the container fails with
 * `CreateContainerConfigError` and is retried, never started without its service variables. A
 * reference nodelet cannot resolve (a missing configmap, secret or key that is not optional, an unsupported field path, an env file that cannot be read) is a
 * `CreateContainerConfigError`. `fileKeyRef` values come from env files in the pod's emptyDir
 * volumes (`env-file.ts`).
 */
import type {
  V1ConfigMap,
  V1ConfigMapEnvSource,
  V1ConfigMapKeySelector,
  V1Container,
  V1EnvFromSource,
  V1EnvVar,
  V1FileKeySelector,
  V1Pod,
  V1Secret,
  V1SecretEnvSource,
  V1SecretKeySelector,
} from '@kubernetes/client-node';
import type { KeyValue } from '../../cri/types.js';
import { expandVars } from './expand-vars.js';
import { serviceEnvVars, SERVICES_NOT_SYNCED_MESSAGE, type ServiceLister } from './service-env.js';
import { isUnsupportedResourceFieldError, resourceFieldValue } from '../model/resource-field.js';
import { ContainerStartError, errorMessage } from '../model/sync-errors.js';
import { EnvFileError, fileLines, lookupEnvFileKey, secureJoin } from './env-file.js';

/** What env resolution needs from the API server. `undefined` means not found. */
export interface EnvSourceApi {
  readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  readSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
}

export interface EnvContext {
  readonly pod: V1Pod;
  readonly container: V1Container;
  readonly api: EnvSourceApi;
  /** The node's cached services, for the service variables. */
  readonly services: ServiceLister;
  readonly podIps: readonly string[];
  readonly nodeIp: string;
  /** Node allocatable, the default for `resourceFieldRef` when the container sets no limit. */
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  /** The pod's prepared volumes (name → host directory), for `fileKeyRef`; absent: none prepared. */
  readonly volumeHostPaths?: ReadonlyMap<string, string>;
  /** Logs why an env file could not be read (the container's error says only that it could not). */
  readonly logEnvFileError?: (error: EnvFileError) => void;
}

function configError(ctx: EnvContext, message: string): ContainerStartError {
  return new ContainerStartError(ctx.container.name, 'CreateContainerConfigError', message);
}

function decodeSecret(secret: V1Secret, key: string): string | undefined {
  const data = secret.data?.[key];
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  return secret.stringData?.[key];
}

function fieldValue(ctx: EnvContext, fieldPath: string): string {
  const meta = ctx.pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed !== null) {
    const [, kind, key = ''] = keyed;
    return (kind === 'labels' ? meta.labels : meta.annotations)?.[key] ?? '';
  }
  const fields: Readonly<Record<string, string | undefined>> = {
    'metadata.name': meta.name,
    'metadata.namespace': meta.namespace,
    'metadata.uid': meta.uid,
    'spec.nodeName': ctx.pod.spec?.nodeName,
    'spec.serviceAccountName': ctx.pod.spec?.serviceAccountName,
    'status.hostIP': ctx.nodeIp,
    'status.hostIPs': ctx.nodeIp,
    'status.podIP': ctx.podIps[0] ?? '',
    'status.podIPs': ctx.podIps.join(','),
  };
  if (!(fieldPath in fields)) throw configError(ctx, `unsupported fieldRef fieldPath "${fieldPath}"`);
  return fields[fieldPath] ?? '';
}

function resourceValue(ctx: EnvContext, resource: string, divisor: string | undefined): string {
  try {
    return resourceFieldValue(ctx.container, resource, divisor, ctx.nodeAllocatable);
  } catch (error) {
    if (isUnsupportedResourceFieldError(error)) throw configError(ctx, error.message);
    throw error;
  }
}

function namespaceOf(ctx: EnvContext): string {
  return ctx.pod.metadata?.namespace ?? 'default';
}

async function configMapKeyValue(ctx: EnvContext, ref: V1ConfigMapKeySelector): Promise<string | undefined> {
  const name = ref.name ?? '';
  const cm = await ctx.api.readConfigMap(namespaceOf(ctx), name);
  const value = cm?.data?.[ref.key];
  if (value !== undefined || ref.optional === true) return value;
  throw configError(ctx, cm === undefined ? `configmap "${name}" not found` : `couldn't find key ${ref.key} in ConfigMap ${namespaceOf(ctx)}/${name}`);
}

async function secretKeyValue(ctx: EnvContext, ref: V1SecretKeySelector): Promise<string | undefined> {
  const name = ref.name ?? '';
  const secret = await ctx.api.readSecret(namespaceOf(ctx), name);
  const value = secret === undefined ? undefined : decodeSecret(secret, ref.key);
  if (value !== undefined || ref.optional === true) return value;
  throw configError(ctx, secret === undefined ? `secret "${name}" not found` : `couldn't find key ${ref.key} in Secret ${namespaceOf(ctx)}/${name}`);
}

/**
 * A `fileKeyRef` value from the env file in the pod's emptyDir, with the kubelet's messages; as in
 * the kubelet, a key assigned an empty value counts as missing.
 */
async function fileKeyValue(ctx: EnvContext, ref: V1FileKeySelector): Promise<string | undefined> {
  const root = ctx.volumeHostPaths?.get(ref.volumeName);
  if (root === undefined) throw configError(ctx, `cannot find the volume "${ref.volumeName}" referenced by FileKeyRef`);
  let file = '';
  let value: string | undefined;
  try {
    file = await secureJoin(root, ref.path);
    value = await lookupEnvFileKey(fileLines(file), ref.key);
  } catch (error) {
    ctx.logEnvFileError?.(error instanceof EnvFileError ? error : new EnvFileError(errorMessage(error)));
    throw configError(ctx, "couldn't parse env file");
  }
  if (value !== undefined && value !== '') return value;
  if (ref.optional === true) return undefined;
  throw configError(ctx, `environment variable key "${ref.key}" not found in file "${file}"`);
}

/** The value of one `env` entry; `undefined` when an optional reference is missing (the variable is skipped). */
async function refValue(ctx: EnvContext, env: V1EnvVar): Promise<string | undefined> {
  const from = env.valueFrom;
  if (from === undefined) return env.value ?? '';
  if (from.fieldRef) return fieldValue(ctx, from.fieldRef.fieldPath);
  if (from.resourceFieldRef) return resourceValue(ctx, from.resourceFieldRef.resource, from.resourceFieldRef.divisor);
  if (from.configMapKeyRef) return configMapKeyValue(ctx, from.configMapKeyRef);
  if (from.secretKeyRef) return secretKeyValue(ctx, from.secretKeyRef);
  if (from.fileKeyRef) return fileKeyValue(ctx, from.fileKeyRef);
  throw configError(ctx, `env var "${env.name}": unsupported valueFrom source`);
}

function prefixed(prefix: string, entries: [string, string][]): Record<string, string> {
  return Object.fromEntries(entries.map(([k, v]) => [prefix + k, v]));
}

async function configMapEntries(ctx: EnvContext, ref: V1ConfigMapEnvSource): Promise<[string, string][]> {
  const cm = await ctx.api.readConfigMap(namespaceOf(ctx), ref.name ?? '');
  if (cm === undefined && ref.optional !== true) throw configError(ctx, `configmap "${ref.name ?? ''}" not found`);
  return Object.entries(cm?.data ?? {});
}

async function secretEntries(ctx: EnvContext, ref: V1SecretEnvSource): Promise<[string, string][]> {
  const secret = await ctx.api.readSecret(namespaceOf(ctx), ref.name ?? '');
  if (secret === undefined) {
    if (ref.optional !== true) throw configError(ctx, `secret "${ref.name ?? ''}" not found`);
    return [];
  }
  return Object.keys(secret.data ?? {}).map((k) => [k, decodeSecret(secret, k) ?? '']);
}

async function envFromValues(ctx: EnvContext, source: V1EnvFromSource): Promise<Record<string, string>> {
  const prefix = source.prefix ?? '';
  if (source.configMapRef) return prefixed(prefix, await configMapEntries(ctx, source.configMapRef));
  if (source.secretRef) return prefixed(prefix, await secretEntries(ctx, source.secretRef));
  return {};
}

/** Resolves the container's environment, in the order the runtime should set it. */
export async function resolveContainerEnv(ctx: EnvContext): Promise<KeyValue[]> {
  if (!ctx.services.hasSynced()) throw configError(ctx, SERVICES_NOT_SYNCED_MESSAGE);
  // enableServiceLinks is defaulted to true by the API server; an absent value means the default.
  const links = ctx.pod.spec?.enableServiceLinks ?? true;
  // First, so envFrom and env override them and $(VAR) can refer to them.
  const vars = new Map<string, string>(serviceEnvVars(ctx.services.list(), namespaceOf(ctx), links).map((e) => [e.key, e.value]));
  for (const source of ctx.container.envFrom ?? []) {
    for (const [k, v] of Object.entries(await envFromValues(ctx, source))) vars.set(k, v);
  }
  for (const env of ctx.container.env ?? []) {
    const raw = await refValue(ctx, env);
    if (raw === undefined) continue;
    vars.set(env.name, env.valueFrom === undefined ? expandVars(raw, (name) => vars.get(name)) : raw);
  }
  return [...vars].map(([key, value]) => ({ key, value }));
}

/** Expands `$(VAR)` references in command and args against the resolved environment. */
export function expandCommand(args: readonly string[] | undefined, env: readonly KeyValue[]): string[] {
  const vars = new Map(env.map((e) => [e.key, e.value]));
  return (args ?? []).map((a) => expandVars(a, (name) => vars.get(name)));
}
