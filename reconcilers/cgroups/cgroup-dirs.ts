/**
 * Directory walks shared by the cgroup v1 and v2 filesystems: a cgroup is a directory, its
 * processes are in `cgroup.procs` in both versions, and rmdir removes an empty one (the kernel
 * removes its control files itself).
 */
import { readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Whether `dir` exists. Errors other than "no such entry" are thrown. */
export function isPresent(dir: string): boolean {
  return statSync(dir, { throwIfNoEntry: false }) !== undefined;
}

export function isNotFound(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** Child directories; none when the directory does not exist. */
export function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

export function pidsUnder(dir: string): number[] {
  let own: number[];
  try {
    own = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter((l) => l.trim() !== '').map(Number);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  return [...own, ...subdirs(dir).flatMap((child) => pidsUnder(path.join(dir, child)))];
}

/** rmdir of a cgroup directory and its descendants, deepest first (cgroupfs removes the control files itself). */
export function removeTree(dir: string): void {
  for (const child of subdirs(dir)) removeTree(path.join(dir, child));
  try {
    rmdirSync(dir);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}
