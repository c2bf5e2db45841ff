/**
 * Looking a name up beneath the log directory as Go's `os.Root` does (`root.Stat`,
 * `os.OpenInRoot`), which is how the kubelet v1.37 finds a node log query's files, with Go's error
 * text. The name is walked one component at a time: a symbolic link is replaced by its target
 * (at most 8 of them, else "too many levels of symbolic links"); an absolute name or link target,
 * or `..` climbing above the root, is "path escapes from parent", even where it would land back
 * inside; a component before the last that is not a directory is "not a directory", as is a last
 * one followed by a slash. So nothing outside the root is ever reached by name.
 *
 * Opening checks more than the walk can: the file is opened without following a link
 * (`O_NOFOLLOW`), never blocking (`O_NONBLOCK`), must be the file the walk found (device and
 * inode), and its real path, read from the open descriptor, must lie beneath the root's. A
 * directory swapped for a link between the walk and the open thus cannot lead out.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** Go's `os.Root` operation names, as its errors print them. */
export type RootOp = 'statat' | 'openat';

/** A name that could not be looked up beneath the root; `message` is Go's `*PathError` text. */
export class RootPathError extends Error {
  override readonly name = 'RootPathError';
  constructor(
    readonly op: RootOp,
    readonly target: string,
    readonly reason: string,
    /** Go's `errors.Is(err, fs.ErrNotExist)`. */
    readonly notExist: boolean,
  ) {
    super(`${op} ${target}: ${reason}`);
  }
}

export function isRootPathError(error: unknown): error is RootPathError {
  return error instanceof RootPathError;
}

const ESCAPES = 'path escapes from parent';
/** The errno texts Go prints (syscall.Errno.Error()). */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'file name too long',
  EIO: 'input/output error',
};
const MAX_SYMLINKS = 8;
const MAX_STEPS = 255;
const MAX_RESTARTS = 8;

/** The components of a name relative to the root, as Go's splitPathInRoot; a string is the refusal. */
export function splitInRoot(name: string, prefix: readonly string[] = [], suffix: readonly string[] = []): { parts: string[]; endsInSlash: boolean } | string {
  if (name === '') return 'empty path';
  if (name.startsWith('/')) return ESCAPES;
  const own = name.split('/').filter((p) => p !== '');
  // "." components go, except the last one.
  const kept = own.filter((p, i) => p !== '.' || i === own.length - 1);
  return { parts: [...prefix, ...kept, ...suffix], endsInSlash: name.endsWith('/') };
}

/** Go's text of a failed system call's errno (`no such file or directory`), when it is one nodelet words as Go. */
export function goErrnoText(error: unknown): string | undefined {
  const code = errnoCode(error);
  return code === undefined ? undefined : ERRNO_TEXT[code];
}

function errnoCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** What a lookup found: the path to open and the entry's own stats (never a link's). */
export interface RootEntry {
  readonly path: string;
  readonly stats: Stats;
}

interface Walk {
  parts: string[];
  endsInSlash: boolean;
  /** The component being looked at. */
  i: number;
  links: number;
  readonly root: string;
  /** The name asked for and the operation, for errors. */
  readonly fail: (reason: string, notExist?: boolean) => RootPathError;
}

/** Drops `..` components with what they climb over; false when they climb above the root. */
function climb(walk: Walk): boolean {
  let end = walk.i;
  while (walk.parts[end] === '..') end++;
  const count = end - walk.i;
  if (count > walk.i) return false;
  walk.parts.splice(walk.i - count, 2 * count);
  if (walk.parts.length === 0) walk.parts = ['.'];
  walk.i = 0;
  return true;
}

/** Puts a link's target in place of component `i`. @throws RootPathError when it leads out or loops. */
async function follow(walk: Walk, at: string): Promise<void> {
  if (++walk.links > MAX_SYMLINKS) throw walk.fail(ERRNO_TEXT.ELOOP ?? '');
  const target = await readlink(at);
  const split = splitInRoot(target, walk.parts.slice(0, walk.i), walk.parts.slice(walk.i + 1));
  if (typeof split === 'string') throw walk.fail(ESCAPES);
  if (walk.i === walk.parts.length - 1 && split.endsInSlash) walk.endsInSlash = true;
  // The components already walked stay valid only when the target keeps them.
  if (split.parts.length < walk.i || split.parts.slice(0, walk.i).some((p, k) => p !== walk.parts[k])) walk.i = 0;
  walk.parts = split.parts;
}

/** Looks at component `i`: the entry when it is the last, else undefined (the walk moved on). */
async function visit(walk: Walk): Promise<RootEntry | undefined> {
  const at = path.join(walk.root, ...walk.parts.slice(0, walk.i + 1));
  const last = walk.i === walk.parts.length - 1;
  let stats: Stats;
  try {
    stats = await lstat(at);
    if (stats.isSymbolicLink()) {
      await follow(walk, at);
      return undefined;
    }
  } catch (error) {
    if (isRootPathError(error)) throw error;
    const code = errnoCode(error);
    const text = code === undefined ? undefined : ERRNO_TEXT[code];
    if (text === undefined) throw error;
    throw walk.fail(text, code === 'ENOENT');
  }
  if ((!last || walk.endsInSlash) && !stats.isDirectory()) throw walk.fail(ERRNO_TEXT.ENOTDIR ?? '');
  if (last) return { path: at, stats };
  walk.i++;
  return undefined;
}

/**
 * Looks `name` up beneath `root` (a real path) as `os.Root` does; see this file's header.
 * @throws RootPathError with Go's text (`statat x: no such file or directory`, …).
 */
export async function lookupInRoot(root: string, name: string, op: RootOp, signal?: AbortSignal): Promise<RootEntry> {
  const fail = (reason: string, notExist = false): RootPathError => new RootPathError(op, name, reason, notExist);
  const first = splitInRoot(name);
  if (typeof first === 'string') throw fail(first);
  const walk: Walk = { ...first, i: 0, links: 0, root, fail };
  // Go bounds the work a hostile name can cause: many steps and many restarts by "..".
  for (let steps = 1, restarts = 0; ; steps++) {
    signal?.throwIfAborted();
    if (steps > MAX_STEPS && restarts > MAX_RESTARTS) throw fail(ERRNO_TEXT.ENAMETOOLONG ?? '');
    if (walk.parts[walk.i] === '..') {
      restarts++;
      if (!climb(walk)) throw fail(ESCAPES);
      continue;
    }
    const entry = await visit(walk);
    if (entry !== undefined) return entry;
  }
}

function within(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/**
 * Opens the regular file `entry` found beneath `root`, or undefined when it is no longer that file
 * or no longer beneath the root (a swap since the walk: as if absent).
 */
export async function openFoundFile(root: string, entry: RootEntry): Promise<FileHandle | undefined> {
  const handle = await open(entry.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const now = await handle.stat();
    const real = await realpath(`/proc/self/fd/${String(handle.fd)}`);
    if (now.isFile() && now.ino === entry.stats.ino && now.dev === entry.stats.dev && within(root, real)) return handle;
  } catch {
    // Unreadable facts about the open file: treated as a swap.
  }
  await handle.close();
  return undefined;
}
