/**
 * The one directory walker: what `du` reports for a directory (allocated blocks, not apparent
 * size, and inodes, the directory itself included; links counted, never followed). Used by the
 * Summary API's volume and log figures and by the eviction manager (disk ranking, local storage
 * limits).
 *
 * A walk stops counting at `maxEntries` entries (the figure is then a lower bound), so a volume
 * holding millions of files cannot stall its caller.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Entries a walk counts at most. */
export const MAX_ENTRIES = 100_000;

/** What `du` reports for a directory: bytes of allocated blocks and inodes, itself included. */
export interface DirUsage {
  readonly usedBytes: number;
  readonly inodesUsed: number;
}

/** The error is "no such file or directory" (or a path component is not a directory). */
export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** `du -s --inodes` and `du -s -B1` of `dir` in one walk; a missing directory uses nothing. */
export async function measureDir(dir: string, maxEntries = MAX_ENTRIES): Promise<DirUsage> {
  let usedBytes = 0;
  let inodesUsed = 0;
  const pending = [dir];
  while (pending.length > 0 && inodesUsed < maxEntries) {
    const current = pending.pop() ?? dir;
    try {
      const info = await lstat(current);
      usedBytes += info.blocks * 512;
      inodesUsed += 1;
      if (info.isDirectory()) for (const name of await readdir(current)) pending.push(path.join(current, name));
    } catch (error: unknown) {
      // Removed while walking (a file rotated, a volume refreshed): not counted.
      if (!isMissing(error)) throw error;
    }
  }
  return { usedBytes, inodesUsed };
}
