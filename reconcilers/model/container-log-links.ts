/**
 * The container log links themselves: made when a container has started, removed with the
 * container, as the kubelet's `startContainer` and `removeContainerLog` do. The names are
 * `log-link-names.ts`'s; which dangling links container GC removes is `controllers/gc`'s.
 *
 * A link is never a reason for a container not to start: the caller logs a failure to make one
 * and goes on (the kubelet does the same). A link that already exists is left as it is.
 */
import { mkdir, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { isNotFound } from './container-logs.js';
import { containerLogLinkName, type LogLinkOwner } from './log-link-names.js';

/** A link could not be made or removed for a reason other than its absence; `cause` is the filesystem's error. */
export class LogLinkError extends Error {
  constructor(
    readonly link: string,
    readonly operation: 'create' | 'remove',
    options: { readonly cause: unknown },
  ) {
    super(`could not ${operation} the container log link ${link}: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`, options);
    this.name = 'LogLinkError';
  }
}

export function isLogLinkError(err: unknown): err is LogLinkError {
  return err instanceof LogLinkError;
}

/** What {@link createContainerLogLink} did. */
export type LogLinkOutcome =
  /** The link now points at the log file. */
  | 'created'
  /** No log file (a runtime that logs elsewhere): no link, which would only dangle until GC removed it. */
  | 'no-log-file'
  /** A link (or a file) of that name was there already and is left alone. */
  | 'exists';

/** Where a started container's link goes, and what it points at. */
export interface LogLinkRequest {
  /** The link directory (`--container-log-link-dir`). */
  readonly dir: string;
  readonly owner: LogLinkOwner;
  /** The container's log file: the sandbox's log directory joined with the container's log path. */
  readonly logFile: string;
}

function isAlreadyThere(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'EEXIST';
}

/**
 * Makes `<dir>/<link name>` → `logFile` when the log file exists. A missing link directory is made
 * first (another tool may have removed it since the agent started).
 * @throws LogLinkError when the link cannot be made.
 */
export async function createContainerLogLink(request: LogLinkRequest): Promise<LogLinkOutcome> {
  const link = path.join(request.dir, containerLogLinkName(request.owner));
  try {
    await stat(request.logFile);
  } catch (err: unknown) {
    if (isNotFound(err)) return 'no-log-file';
    // Any other answer (no permission to look, say) does not say the file is absent: link anyway, as the kubelet.
  }
  try {
    await symlinkMakingDir(request.logFile, link);
    return 'created';
  } catch (err: unknown) {
    if (isAlreadyThere(err)) return 'exists';
    throw new LogLinkError(link, 'create', { cause: err });
  }
}

async function symlinkMakingDir(target: string, link: string): Promise<void> {
  try {
    await symlink(target, link);
  } catch (err: unknown) {
    if (!isNotFound(err)) throw err;
    await mkdir(path.dirname(link), { recursive: true, mode: 0o755 });
    await symlink(target, link);
  }
}

/**
 * Removes a container's link; true when there was one. Only the entry of the owner's exact name
 * goes, whatever it points at.
 * @throws LogLinkError when it exists and cannot be removed.
 */
export async function removeContainerLogLink(dir: string, owner: LogLinkOwner): Promise<boolean> {
  return removeLogLinkNamed(dir, containerLogLinkName(owner));
}

/**
 * Removes the link `name` in `dir`; true when there was one.
 * @throws LogLinkError when it exists and cannot be removed.
 */
export async function removeLogLinkNamed(dir: string, name: string): Promise<boolean> {
  const link = path.join(dir, name);
  try {
    await unlink(link);
    return true;
  } catch (err: unknown) {
    if (isNotFound(err)) return false;
    throw new LogLinkError(link, 'remove', { cause: err });
  }
}
