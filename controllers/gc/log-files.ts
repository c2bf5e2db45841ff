/**
 * The log directories GC removes: that of a pod that no longer exists (a removed container's own
 * log files: `reconcilers/model/container-logs.ts`); the container log links GC looks at
 * (`log-link-gc-plan.ts` decides); and the filesystem figures GC decides on.
 */
import { readdir, readlink, rm, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { PodKey } from '../../util/pod-key.js';
import type { ImageFsStats } from './image-gc-plan.js';
import type { LogLinkEntry } from './log-link-gc-plan.js';
import { LOG_LINK_SUFFIX } from '../../reconcilers/model/log-link-names.js';
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

/**
 * The entries of the link directory whose names end in `.log`, each with what it points at and
 * whether that exists (a missing directory has none). An entry that vanishes while being read is
 * left out: it needs no removal.
 */
export async function listLogLinks(dir: string): Promise<LogLinkEntry[]> {
  let entries: { name: string; isSymbolicLink(): boolean }[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err: unknown) {
    if (isNotFound(err)) return [];
    throw err;
  }
  const read = await Promise.all(entries.filter((e) => e.name.endsWith(LOG_LINK_SUFFIX)).map(async (entry): Promise<LogLinkEntry | undefined> => {
    if (!entry.isSymbolicLink()) return { name: entry.name, target: undefined, targetExists: true };
    const file = path.join(dir, entry.name);
    try {
      return { name: entry.name, target: await readlink(file), targetExists: await exists(file) };
    } catch (err: unknown) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }));
  return read.filter((e): e is LogLinkEntry => e !== undefined);
}

/** Whether `file` resolves (through links) to something that exists. */
async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err: unknown) {
    // As the kubelet: only "does not exist" makes a link dangling; other errors say nothing.
    if (isNotFound(err)) return false;
    return true;
  }
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
