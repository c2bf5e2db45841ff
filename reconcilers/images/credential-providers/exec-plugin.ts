/**
 * One call of a credential provider exec plugin, the kubelet's protocol
 * (pkg/credentialprovider/plugin/plugin.go, `execPlugin`): the plugin at `<bin-dir>/<name>` runs
 * with the provider's args, the agent's environment plus the provider's `env`, and a
 * `CredentialProviderRequest` for one image on stdin; it answers a `CredentialProviderResponse` on
 * stdout and exits 0. A minute is the most it may take (the kubelet's catch-all timeout).
 *
 * The response is checked as the kubelet checks it: the same apiVersion as configured, kind
 * `CredentialProviderResponse`, a `cacheKeyType` of Image, Registry or Global. Its credentials
 * never appear in an error message.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { parseGoDurationMsOr } from '../../../util/go-duration.js';
import type { RegistryCredential } from '../docker-keyring.js';
import type { CredentialProviderSpec } from './config.js';
import { isRecord } from '../../../util/is-record.js';

/** What the kubelet caches a response under: the image, its registry, or one entry for all. */
export type CacheKeyType = 'Image' | 'Registry' | 'Global';

/** A plugin's answer, decoded. */
export interface CredentialProviderResponse {
  readonly cacheKeyType: CacheKeyType;
  /** Undefined: the provider's default; 0: not cached. */
  readonly cacheDurationMs: number | undefined;
  /** Credentials by image pattern (docker config keys: `registry.io`, `*.registry.io/team`). */
  readonly auth: readonly (readonly [string, RegistryCredential])[];
}

/** A plugin that failed to run, timed out, or answered something the protocol does not allow. */
export class CredentialProviderPluginError extends Error {
  constructor(readonly provider: string, message: string, options?: { cause?: unknown }) {
    super(`credential provider plugin ${provider}: ${message}`, options);
    this.name = 'CredentialProviderPluginError';
  }
}

/** Runs one plugin for one image. */
export type RunCredentialPlugin = (spec: CredentialProviderSpec, image: string, signal?: AbortSignal) => Promise<CredentialProviderResponse>;

/** Where plugins live and how long one may run. */
export interface ExecPluginOptions {
  readonly binDir: string;
  /** Default 60 000 (the kubelet's). */
  readonly timeoutMs?: number;
  /** The environment the provider's `env` is added to; default the agent's. */
  readonly environment?: NodeJS.ProcessEnv;
}

/** Output beyond this is a broken plugin, not credentials. */
const MAX_OUTPUT_BYTES = 1024 * 1024;
const CACHE_KEY_TYPES: readonly CacheKeyType[] = ['Image', 'Registry', 'Global'];

/** Why a finished plugin run failed (killed, a non-zero status, too much output); undefined: it did not. */
function failureOf(code: number | null, killedBy: NodeJS.Signals | null, stdoutBytes: number, timeoutMs: number): string | undefined {
  if (killedBy === 'SIGKILL') return `was killed by SIGKILL (the ${timeoutMs / 1000} s limit, or the pull was cancelled)`;
  if (killedBy !== null) return `was killed by ${killedBy}`;
  if (code !== 0) return `exited with status ${String(code)}`;
  if (stdoutBytes > MAX_OUTPUT_BYTES) return `wrote more than ${MAX_OUTPUT_BYTES} bytes`;
  return undefined;
}

/** The plugin's stdout, or a CredentialProviderPluginError (exit status, signal, timeout, stderr). */
function runProcess(spec: CredentialProviderSpec, image: string, options: ExecPluginOptions, signal: AbortSignal | undefined): Promise<Buffer> {
  const request = JSON.stringify({ apiVersion: spec.apiVersion, kind: 'CredentialProviderRequest', image });
  const env = { ...(options.environment ?? process.env), ...Object.fromEntries(spec.env.map((e) => [e.name, e.value])) };
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(options.binDir, spec.name), [...spec.args], { env, stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL', ...(signal === undefined ? {} : { signal }) });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes <= MAX_OUTPUT_BYTES) stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    // A plugin that exits without reading its request closes stdin under us: not an error of ours.
    child.stdin.on('error', () => undefined);
    child.stdin.end(request);
    child.on('error', (error) => {
      reject(new CredentialProviderPluginError(spec.name, `could not run it for image ${image}: ${error.message}`, { cause: error }));
    });
    child.on('close', (code, killedBy) => {
      const why = failureOf(code, killedBy, stdoutBytes, timeoutMs);
      if (why === undefined) resolve(Buffer.concat(stdout));
      else reject(new CredentialProviderPluginError(spec.name, `${why} for image ${image}: ${stderr.trim()}`));
    });
  });
}

function parseAuth(spec: CredentialProviderSpec, value: unknown): [string, RegistryCredential][] {
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) throw new CredentialProviderPluginError(spec.name, 'auth is not a map of image patterns to credentials');
  return Object.entries(value).map(([key, entry]) => {
    if (!isRecord(entry)) throw new CredentialProviderPluginError(spec.name, `auth["${key}"] is not {username, password}`);
    return [key, { username: typeof entry.username === 'string' ? entry.username : '', password: typeof entry.password === 'string' ? entry.password : '' }];
  });
}

function parseCacheDuration(spec: CredentialProviderSpec, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new CredentialProviderPluginError(spec.name, 'cacheDuration is not a duration string');
  return parseGoDurationMsOr(value, (reason) => new CredentialProviderPluginError(spec.name, `cacheDuration: ${reason}`));
}

/** Decodes and checks a response. @throws CredentialProviderPluginError (never quoting the credentials) */
export function parseCredentialProviderResponse(spec: CredentialProviderSpec, stdout: string): CredentialProviderResponse {
  let doc: unknown;
  try {
    doc = loadYaml(stdout);
  } catch {
    throw new CredentialProviderPluginError(spec.name, 'error decoding credential provider plugin response from stdout');
  }
  if (!isRecord(doc)) throw new CredentialProviderPluginError(spec.name, 'error decoding credential provider plugin response from stdout');
  if (doc.apiVersion !== spec.apiVersion) throw new CredentialProviderPluginError(spec.name, `apiVersion from credential plugin response did not match expected apiVersion:${spec.apiVersion}, actual apiVersion:${String(doc.apiVersion)}`);
  if (doc.kind !== 'CredentialProviderResponse') throw new CredentialProviderPluginError(spec.name, `failed to decode CredentialProviderResponse, unexpected Kind: "${String(doc.kind)}"`);
  const cacheKeyType = CACHE_KEY_TYPES.find((t) => t === doc.cacheKeyType);
  if (cacheKeyType === undefined) throw new CredentialProviderPluginError(spec.name, `credential provider plugin did not return a valid cacheKeyType: ${String(doc.cacheKeyType)}`);
  return { cacheKeyType, cacheDurationMs: parseCacheDuration(spec, doc.cacheDuration), auth: parseAuth(spec, doc.auth) };
}

/** A runner that execs plugins from `options.binDir`. */
export function execCredentialPlugin(options: ExecPluginOptions): RunCredentialPlugin {
  return async (spec, image, signal) => parseCredentialProviderResponse(spec, (await runProcess(spec, image, options, signal)).toString('utf8'));
}
