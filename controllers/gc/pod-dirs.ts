/**
 * The pod directories under `<rootDir>/pods` on disk, for orphan GC: listing them and removing one
 * after its own mounts are gone. Entries that are not directories, or not usable as a UID, are
 * ignored (never removed).
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { PodDirListing } from './orphan-pod-dir-plan.js';

function isNotFound(err: unknown): boolean {
  return err instanceof Error && 'code' in err && (err.code === 'ENOENT' || err.code === 'ENOTDIR');
}

async function namesIn(dir: string, directoriesOnly: boolean): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => !directoriesOnly || e.isDirectory()).map((e) => e.name);
  } catch (err: unknown) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

/** The directories under `<rootDir>/pods` with the entries of their `volumes/` (a missing root has none). */
export async function listPodDirs(rootDir: string): Promise<PodDirListing[]> {
  const podsRoot = path.resolve(rootDir, 'pods');
  const uids = (await namesIn(podsRoot, true)).filter((uid) => uid !== '' && !uid.startsWith('.'));
  return Promise.all(
    uids.map(async (uid) => {
      const dir = path.join(podsRoot, uid);
      return { uid, path: dir, pluginDirs: await namesIn(path.join(dir, 'volumes'), false) };
    }),
  );
}

/** Mount and unmount, injectable so the manager's tests need no root. */
export interface MountTable {
  /** Mount points of the host (`/proc/self/mountinfo`). */
  read(): Promise<readonly { readonly mountPoint: string; readonly fsType: string }[]>;
  /** Unmounts one mount point. */
  unmount(mountPoint: string): Promise<void>;
}

/** Thrown when a directory still has a mount inside after its own mounts were unmounted. */
export class PodDirStillMountedError extends Error {
  constructor(readonly dir: string, readonly mountPoints: readonly string[]) {
    super(`${dir} still has mounts inside: ${mountPoints.join(', ')}`);
    this.name = 'PodDirStillMountedError';
  }
}

export function isPodDirStillMountedError(err: unknown): err is PodDirStillMountedError {
  return err instanceof PodDirStillMountedError;
}

/**
 * Unmounts `unmount` (deepest first), checks that nothing is mounted inside `dir` any more (a
 * recursive removal must never cross into another filesystem), then removes `dir`.
 */
export async function removePodDir(mounts: MountTable, dir: string, unmount: readonly string[]): Promise<void> {
  for (const point of unmount) await mounts.unmount(point);
  const left = (await mounts.read()).map((m) => m.mountPoint).filter((p) => p === dir || p.startsWith(`${dir}/`));
  if (left.length > 0) throw new PodDirStillMountedError(dir, left);
  await rm(dir, { recursive: true, force: true });
}
