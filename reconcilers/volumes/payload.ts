/**
 * A payload is the full set of files one atomic-writer volume (configMap, secret, projected,
 * downwardAPI) must contain, keyed by relative path.
 */
import path from 'node:path';

/** One file of a payload. */
export interface FileProjection {
  readonly data: Buffer;
  /** Permission bits (0–0777). */
  readonly mode: number;
  /** Owner to give the file, when not root (the service-account token of a pod whose containers all run as one user). */
  readonly fsUser?: number;
}

/** Relative path → file. Paths are validated and cleaned by {@link cleanPayloadPath}. */
export type Payload = Map<string, FileProjection>;

/** Mode of payload files when neither the item nor the volume sets one (the API default, 0644). */
export const DEFAULT_FILE_MODE = 0o644;

const MAX_PATH_LENGTH = 4096;
const MAX_NAME_LENGTH = 255;

/**
 * Validates a payload path and returns it cleaned (`a//b/./c` → `a/b/c`). Like the kubelet's atomic
 * writer it rejects empty and absolute paths, `..` elements, names over 255 bytes, paths over
 * 4096 bytes, and a first element starting with `..` (reserved for the writer's own entries).
 * @throws Error describing the problem.
 */
export function cleanPayloadPath(target: string): string {
  if (target === '') throw new Error('invalid path: must not be empty');
  if (path.isAbsolute(target)) throw new Error(`invalid path: must be relative: ${target}`);
  if (Buffer.byteLength(target) > MAX_PATH_LENGTH) throw new Error(`invalid path: longer than ${MAX_PATH_LENGTH} bytes`);
  const elements = target.split('/');
  for (const element of elements) {
    if (element === '..') throw new Error(`invalid path: must not contain '..': ${target}`);
    if (Buffer.byteLength(element) > MAX_NAME_LENGTH) throw new Error(`invalid path: a name is longer than ${MAX_NAME_LENGTH} bytes: ${target}`);
  }
  const cleaned = path.posix.normalize(target).replace(/\/+$/, '');
  if (cleaned === '.' || cleaned === '') throw new Error(`invalid path: names nothing: ${target}`);
  if (cleaned.startsWith('..')) throw new Error(`invalid path: must not start with '..': ${target}`);
  return cleaned;
}

/** Checks a mode from the API (`defaultMode`, item `mode`) and falls back to `fallback` when unset. */
export function fileMode(mode: number | undefined, fallback: number): number {
  if (mode === undefined) return fallback;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
    throw new Error(`invalid file mode ${mode}: must be between 0 and 0777 (511)`);
  }
  return mode;
}

/** Adds `additions` to `payload`; a later source wins a path conflict, as in the kubelet. */
export function mergePayload(payload: Payload, additions: Payload): void {
  for (const [key, file] of additions) payload.set(key, file);
}
