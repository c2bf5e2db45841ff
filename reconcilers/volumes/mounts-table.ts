/**
 * The host's mount table, as nodelet needs it for memory-backed emptyDirs: is a directory a mount
 * point, and which mounts lie under a pod's directory (to unmount before removing it). Reads
 * `/proc/self/mountinfo`; mounts and unmounts with util-linux `mount`/`umount` (the agent runs as
 * root on the host, or privileged with bidirectional propagation of its root directory).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseMountInfo, type MountEntry } from '../../util/mountinfo.js';
import { settleSync } from '../../util/sync-call.js';

const run = promisify(execFile);

/**
 * The mount table now. Read synchronously: procfs generates it in kernel memory, and a
 * promise-based read of a file whose size procfs reports as 0 goes through the thread pool once
 * per 64 KiB chunk, plus open, stat and close, for a table read at every pod's removal.
 */
export function readMounts(): Promise<MountEntry[]> {
  return settleSync(() => parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')));
}

/** The mount at exactly `dir`, the last one if stacked. */
export async function mountAt(dir: string): Promise<MountEntry | undefined> {
  return (await readMounts()).filter((m) => m.mountPoint === path.resolve(dir)).at(-1);
}

/** Mount points under `dir` (itself included), deepest first: the order to unmount them in. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const root = path.resolve(dir);
  const points = (await readMounts()).map((m) => m.mountPoint).filter((p) => p === root || p.startsWith(`${root}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** `mount -t tmpfs -o <options> tmpfs <dir>`. */
export async function mountTmpfs(dir: string, options: readonly string[]): Promise<void> {
  await run('mount', ['-t', 'tmpfs', ...(options.length === 0 ? [] : ['-o', options.join(',')]), 'tmpfs', dir]);
}

/** Unmounts every mount under `dir` (deepest first); a lazy unmount if one is busy. */
export async function unmountAllUnder(dir: string): Promise<void> {
  for (const point of await mountsUnder(dir)) {
    try {
      await run('umount', [point]);
    } catch {
      await run('umount', ['-l', point]);
    }
  }
}

/** Runs util-linux `mount` with `args`. */
export async function runMount(args: readonly string[]): Promise<void> {
  await run('mount', [...args]);
}
