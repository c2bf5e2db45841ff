/**
 * The log directories GC removes: that of a pod that no longer exists (a removed container's own
 * log files: `reconcilers/model/container-logs.ts`), and the filesystem figures GC decides on.
 */
import { readdir, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { PodKey } from '../../util/pod-key.js';
import type { ImageFsStats } from './image-gc-plan.js';
import { isNotFound } from '../../reconcilers/model/container-logs.js';

/** A pod log directory, `<namespace>_<name>_<uid>`, and the pod it names. */
export interface PodLogDirectory {
  readonly path: string;
  readonly pod: PodKey;
}

/** The pod log directories under `podLogDir` (other entries are ignored; a missing root has none). */
export async function listPodLogDirectories(podLogDir: string): Promise<PodLogDirectory[]> {
  let entries: { name: string; isDirectory(): boolean }[];
  try {
    entries = await readdir(podLogDir, { withFileTypes: true });
  } catch (err: unknown) {
    if (isNotFound(err)) return [];
    throw err;
  }
  return entries.flatMap((entry) => {
    const parts = entry.name.split('_');
    const [namespace, name, uid] = parts;
    if (!entry.isDirectory() || parts.length !== 3 || namespace === undefined || name === undefined || uid === undefined || uid === '') return [];
    return [{ path: path.join(podLogDir, entry.name), pod: { namespace, name, uid } }];
  });
}

/** Removes one pod log directory and everything in it. */
export async function removePodLogDirectory(dir: PodLogDirectory): Promise<void> {
  await rm(dir.path, { recursive: true, force: true });
}

/** Capacity and available bytes of the filesystem holding `mountpoint` (`statfs`, as unprivileged users see it). */
export async function filesystemStats(mountpoint: string): Promise<ImageFsStats> {
  const stats = await statfs(mountpoint);
  return { capacityBytes: stats.blocks * stats.bsize, availableBytes: stats.bavail * stats.bsize };
}
