/**
 * A removed container's log files, removed with it as the kubelet does (`removeContainerLog`):
 * its `<n>.log` and rotations. Only paths under the pod log root are ever touched, so a log path
 * the runtime reports elsewhere (a test's, another tool's) is left alone. Used by container GC and
 * by the removal of an evicted pod's dead containers; log rotation checks paths with `isUnder`. Also
 * the restart count a log directory gives a container the runtime has no instance of.
 */
import type { Dirent } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/** Whether `file` lies strictly under `root`. */
export function isUnder(root: string, file: string): boolean {
  const relative = path.relative(path.resolve(root), path.resolve(file));
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

/** Whether a filesystem error says the entry does not exist. */
export function isNotFound(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'ENOENT';
}

/**
 * Removes a container's log file `<n>.log` and its rotations (`<n>.log.<suffix>`), as the kubelet
 * does when it removes a container. Returns how many files went; a path outside `podLogDir` or
 * already gone removes nothing.
 */
export async function removeContainerLogs(podLogDir: string, logPath: string): Promise<number> {
  if (logPath === '' || !isUnder(podLogDir, logPath)) return 0;
  const dir = path.dirname(logPath);
  const base = path.basename(logPath);
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err: unknown) {
    if (isNotFound(err)) return 0;
    throw err;
  }
  const mine = entries.filter((name) => name === base || name.startsWith(`${base}.`));
  for (const name of mine) await rm(path.join(dir, name), { force: true });
  return mine.length;
}

/** `<n>.log` and its rotations (`<n>.log.<suffix>`): the kubelet's calcRestartCountByLogDir matches this prefix. */
const RESTART_LOG = /^(\d+)\.log/;

/**
 * The restart count a container's log directory gives: one more than the highest `<n>` of its
 * `<n>.log` files (rotations included), 0 when it has none or does not exist, as the kubelet's
 * `calcRestartCountByLogDir`. What a container the runtime has no instance of (an in-place restart
 * of its pod removed them all) starts with, so its new log file is a new one.
 */
export async function restartCountFromLogDir(dir: string): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err: unknown) {
    if (isNotFound(err)) return 0;
    throw err;
  }
  return entries.reduce((count, entry) => {
    const match = entry.isDirectory() ? null : RESTART_LOG.exec(entry.name);
    return match === null ? count : Math.max(count, Number(match[1]) + 1);
  }, 0);
}
