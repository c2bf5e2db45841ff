/** Small filesystem helpers shared by the volume plugins. */
import { promises as fs } from 'node:fs';

/** True when `error` is a Node system error with the given code (`ENOENT`, `EEXIST`…). */
export function hasErrorCode(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}

/** `lstat`, or `undefined` when nothing is at `target`. */
export async function lstatIfExists(target: string): Promise<import('node:fs').Stats | undefined> {
  try {
    return await fs.lstat(target);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** `stat` (following symlinks), or `undefined` when nothing is at `target`. */
export async function statIfExists(target: string): Promise<import('node:fs').Stats | undefined> {
  try {
    return await fs.stat(target);
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/**
 * Creates `dir` if missing and gives it exactly `mode` (mkdir alone is subject to the umask).
 * @returns true when the directory was created by this call.
 */
export async function ensureDir(dir: string, mode: number): Promise<boolean> {
  try {
    await fs.mkdir(dir, { mode });
  } catch (error) {
    if (hasErrorCode(error, 'EEXIST')) return false;
    throw error;
  }
  await fs.chmod(dir, mode);
  return true;
}
