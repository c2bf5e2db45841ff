/**
 * The kubelet's `--image-credential-provider-config`: a `CredentialProviderConfig` (group
 * `kubelet.config.k8s.io`) naming exec plugins that hand out registry credentials, read and
 * validated as the kubelet reads it (pkg/credentialprovider/plugin/config.go): one YAML or JSON
 * file, or a directory whose `*.json`, `*.yaml` and `*.yml` files are merged in name order, every
 * provider's name unique across them.
 *
 * A provider's `tokenAttributes` (the plugin receives a service account token of the pod) is
 * refused: nodelet does not mint tokens for plugins, and silently calling the plugin without one
 * would hand it a different request than its operator configured.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { parseGoDurationMsOr } from '../../../util/go-duration.js';
import { isRecord } from '../../../util/is-record.js';

/** The config file's groups and versions the kubelet decodes. */
export const CONFIG_API_VERSIONS = ['kubelet.config.k8s.io/v1', 'kubelet.config.k8s.io/v1beta1', 'kubelet.config.k8s.io/v1alpha1'] as const;
/** The plugin protocol versions (`credentialprovider.kubelet.k8s.io`); the wire format is the same. */
export const PLUGIN_API_VERSIONS = ['credentialprovider.kubelet.k8s.io/v1', 'credentialprovider.kubelet.k8s.io/v1beta1', 'credentialprovider.kubelet.k8s.io/v1alpha1'] as const;

/** One exec plugin of the config. */
export interface CredentialProviderSpec {
  /** The executable's name in `--image-credential-provider-bin-dir`. */
  readonly name: string;
  /** Image patterns (`*.registry.io`, `registry.io:5000/team`) the plugin is asked about. */
  readonly matchImages: readonly string[];
  /** How long credentials are cached when the response names no duration; 0: not cached. */
  readonly defaultCacheDurationMs: number;
  /** The protocol version sent and expected back. */
  readonly apiVersion: string;
  readonly args: readonly string[];
  /** Added to (and overriding) the agent's own environment. */
  readonly env: readonly { readonly name: string; readonly value: string }[];
}

/** A config the kubelet would refuse; the message names the file and the field. */
export class CredentialProviderConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialProviderConfigError';
  }
}

function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) throw new CredentialProviderConfigError(`${field}: must be a list of strings`);
  return value;
}

/** A `matchImages` entry: a host (globs per label, an optional port) and an optional path, no scheme or spaces. */
function checkMatchImage(pattern: string, field: string): void {
  const bare = pattern.replace(/^https?:\/\//, '');
  const host = bare.split('/', 1)[0] ?? '';
  if (host === '' || /\s/.test(bare) || !/^[\w.*[\]\-^:]+$/.test(host)) throw new CredentialProviderConfigError(`${field}: match image is invalid: "${pattern}"`);
}

function checkName(name: unknown, field: string): string {
  if (typeof name !== 'string' || name === '') throw new CredentialProviderConfigError(`${field}.name: required`);
  if (name.includes('/') || name.includes(' ') || name === '.' || name === '..') throw new CredentialProviderConfigError(`${field}.name: "${name}" cannot contain '/' or spaces, or be '.' or '..'`);
  return name;
}

function parseEnv(value: unknown, field: string): { name: string; value: string }[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new CredentialProviderConfigError(`${field}: must be a list of {name, value}`);
  return value.map((entry, i) => {
    if (!isRecord(entry) || typeof entry.name !== 'string' || entry.name === '') throw new CredentialProviderConfigError(`${field}[${i}].name: required`);
    return { name: entry.name, value: typeof entry.value === 'string' ? entry.value : '' };
  });
}

function parseCacheDuration(value: unknown, field: string): number {
  if (value === undefined || value === null) throw new CredentialProviderConfigError(`${field}: required`);
  if (typeof value !== 'string') throw new CredentialProviderConfigError(`${field}: must be a duration such as 12h`);
  const ms = parseGoDurationMsOr(value, (reason) => new CredentialProviderConfigError(`${field}: ${reason}`));
  if (ms < 0) throw new CredentialProviderConfigError(`${field}: must be greater than or equal to 0`);
  return ms;
}

/** One provider entry, validated as the kubelet's validateCredentialProviderConfig. */
function parseProvider(raw: unknown, field: string): CredentialProviderSpec {
  if (!isRecord(raw)) throw new CredentialProviderConfigError(`${field}: must be an object`);
  const name = checkName(raw.name, field);
  const apiVersion = raw.apiVersion;
  if (typeof apiVersion !== 'string' || apiVersion === '') throw new CredentialProviderConfigError(`${field}.apiVersion: required`);
  if (!(PLUGIN_API_VERSIONS as readonly string[]).includes(apiVersion)) throw new CredentialProviderConfigError(`${field}.apiVersion: "${apiVersion}" is not supported; one of ${PLUGIN_API_VERSIONS.join(', ')}`);
  const matchImages = stringList(raw.matchImages, `${field}.matchImages`);
  if (matchImages.length === 0) throw new CredentialProviderConfigError(`${field}.matchImages: at least 1 item in matchImages is required`);
  matchImages.forEach((m, i) => { checkMatchImage(m, `${field}.matchImages[${i}]`); });
  if (raw.tokenAttributes !== undefined && raw.tokenAttributes !== null) {
    throw new CredentialProviderConfigError(`${field}.tokenAttributes: service account tokens for credential providers are not supported by nodelet`);
  }
  return {
    name,
    matchImages,
    defaultCacheDurationMs: parseCacheDuration(raw.defaultCacheDuration, `${field}.defaultCacheDuration`),
    apiVersion,
    args: stringList(raw.args, `${field}.args`),
    env: parseEnv(raw.env, `${field}.env`),
  };
}

/** The providers of one config document (YAML or JSON). @throws CredentialProviderConfigError */
export function parseCredentialProviderConfig(text: string, source: string): CredentialProviderSpec[] {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (error) {
    throw new CredentialProviderConfigError(`${source}: not YAML or JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isRecord(doc)) throw new CredentialProviderConfigError(`${source}: not a CredentialProviderConfig`);
  if (doc.kind !== 'CredentialProviderConfig') throw new CredentialProviderConfigError(`${source}: kind is ${JSON.stringify(doc.kind)}, not CredentialProviderConfig`);
  if (!(CONFIG_API_VERSIONS as readonly unknown[]).includes(doc.apiVersion)) throw new CredentialProviderConfigError(`${source}: apiVersion ${JSON.stringify(doc.apiVersion)} is not one of ${CONFIG_API_VERSIONS.join(', ')}`);
  const providers = doc.providers;
  if (!Array.isArray(providers)) throw new CredentialProviderConfigError(`${source}: providers: at least 1 item is required`);
  return providers.map((p, i) => parseProvider(p, `${source}: providers[${i}]`));
}

/** The config files a path names: itself, or a directory's `*.json`, `*.yaml`, `*.yml` in name order. */
async function configFiles(configPath: string): Promise<string[]> {
  if (!(await stat(configPath)).isDirectory()) return [configPath];
  const entries = await readdir(configPath, { withFileTypes: true });
  const files = entries.filter((e) => !e.isDirectory() && /\.(json|ya?ml)$/.test(e.name)).map((e) => path.join(configPath, e.name)).sort();
  if (files.length === 0) throw new CredentialProviderConfigError(`no configuration files found in directory "${configPath}"`);
  return files;
}

/**
 * Every provider of `--image-credential-provider-config`, with the bin dir and each plugin checked
 * to exist, as the kubelet does before it starts. @throws CredentialProviderConfigError
 */
export async function loadCredentialProviders(configPath: string, binDir: string): Promise<CredentialProviderSpec[]> {
  const read = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof CredentialProviderConfigError) throw error;
      throw new CredentialProviderConfigError(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  await read(`plugin binary directory ${binDir}`, () => stat(binDir));
  const providers: CredentialProviderSpec[] = [];
  for (const file of await read(`credential provider config ${configPath}`, () => configFiles(configPath))) {
    const text = await read(`credential provider config ${file}`, () => readFile(file, 'utf8'));
    for (const provider of parseCredentialProviderConfig(text, file)) {
      if (providers.some((p) => p.name === provider.name)) throw new CredentialProviderConfigError(`duplicate provider name "${provider.name}" found in configuration file(s)`);
      providers.push(provider);
    }
  }
  if (providers.length === 0) throw new CredentialProviderConfigError(`${configPath}: providers: at least 1 item is required`);
  for (const provider of providers) {
    const bin = path.join(binDir, provider.name);
    const info = await read(`plugin binary executable ${bin}`, () => stat(bin));
    if (!info.isFile() || (info.mode & 0o111) === 0) throw new CredentialProviderConfigError(`plugin binary executable ${bin} is not an executable file`);
  }
  return providers;
}
