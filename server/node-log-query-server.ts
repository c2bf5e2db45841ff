/**
 * `/logs/` with the node log query on (`--enable-system-log-query`, KubeletConfiguration
 * `enableSystemLogQuery`; the NodeLogQuery gate is GA and locked on in v1.36), as the kubelet
 * v1.37 answers on a Linux node where journalctl is missing, which is every nodelet node:
 *
 * 1. No query parameter (`query`, `sinceTime`, `untilTime`, `tailLines`, `boot`, `pattern`, each
 *    non-empty): the file server answers (node-logs.ts), as with the feature off.
 * 2. A parameter that does not parse: 400. A query with a path below `/logs/`: 406
 *    `path not allowed in query mode`. A query that fails validation: 406. (node-log-query.ts.)
 * 3. One file (`query=kubelet/kubelet.log`, a name with a slash, relative to the log directory):
 *    the file server serves that path, a directory as its listing.
 * 4. Services (`query=kubelet`): the kubelet asks `journalctl --field _SYSTEMD_UNIT` which units
 *    log to the journal; when journalctl cannot run, none does, and each service is looked for as
 *    a file: `<name>`, `<name>.log`, `<name>/<name>.log` under the log directory, the first one
 *    that is a file is copied (several services one after the other); none: `log not found for
 *    <name>`; another failure: `error getting log for <name>: <why>`. With any option the
 *    kubelet copies nothing and writes a note instead (the options act only on the journal). The
 *    answer is 200 `text/plain;charset=UTF-8`, gzip-compressed when `Accept-Encoding` is exactly
 *    `gzip`, and copying stops after 30 s with `error getting log for <name>: context deadline
 *    exceeded`, as the kubelet's deadline.
 *
 * Not as the kubelet: a FIFO, socket or device where a service's log would be is skipped as a
 * directory is (the kubelet's open would block on a FIFO with no writer).
 */
import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { realpath, type FileHandle } from 'node:fs/promises';
import { constants as zlib, createGzip } from 'node:zlib';
import { parseGoQuery } from './go-format.js';
import { goErrnoText, isRootPathError, lookupInRoot, openFoundFile } from './log-root.js';
import { aggregateErrors, fileToCheck, hasOptions, optionsWithFilesNote, parseNodeLogQuery, serviceLogCandidates, validateNodeLogQuery, type NodeLogQuery } from './node-log-query.js';
import { rawQueryOf, serveNodeLogs, type NodeLogsOptions } from './node-logs.js';
import type { RouteRequest } from './routes.js';

/** The kubelet's deadline for one query's copy. */
export const QUERY_COPY_TIMEOUT_MS = 30_000;

/** Where the query reads, and how long a copy may last. */
export interface NodeLogQueryServerOptions extends NodeLogsOptions {
  /** Default {@link QUERY_COPY_TIMEOUT_MS}. */
  readonly copyTimeoutMs?: number;
}

/** Go's `http.Error`: plain text, not to be sniffed, a newline after the message. */
export function sendGoError(res: ServerResponse, status: number, message: string): void {
  const body = `${message}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** Why `file` cannot be looked up under the log directory, in Go's words, or undefined. */
async function fileError(dir: string, file: string): Promise<string | undefined> {
  try {
    await lookupInRoot(await realpath(dir), file, 'statat');
    return undefined;
  } catch (error) {
    if (isRootPathError(error)) return error.message;
    // The directory itself cannot be opened: Go's os.OpenRoot("/var/log/") error.
    const text = goErrnoText(error);
    if (text !== undefined) return `open ${dir.endsWith('/') ? dir : `${dir}/`}: ${text}`;
    throw error;
  }
}

/** Serves `GET /logs/{path…}` with the node log query; see this file's header. */
export async function serveNodeLogsWithQuery(request: RouteRequest, options: NodeLogQueryServerOptions): Promise<void> {
  const { res } = request;
  const parsed = parseNodeLogQuery(parseGoQuery(rawQueryOf(request.req.url)));
  if (parsed.kind === 'none') return serveNodeLogs(request, options);
  if (parsed.kind === 'invalid') {
    sendGoError(res, 400, parsed.message);
    return;
  }
  const name = request.params[0] ?? '';
  if (name !== '' && name !== '/') {
    sendGoError(res, 406, 'path not allowed in query mode');
    return;
  }
  const { query } = parsed;
  const file = fileToCheck(query);
  const errors = validateNodeLogQuery(query, file === undefined ? undefined : await fileError(options.dir, file));
  if (errors.length > 0) {
    sendGoError(res, 406, aggregateErrors(errors));
    return;
  }
  // Validation leaves either services or exactly one file.
  const [only] = query.files;
  if (query.services.length === 0 && only !== undefined) return serveNodeLogs({ ...request, params: [only] }, options);
  return serveServices(request, query, options);
}

/** Why a copy stopped, in the words of the kubelet's context error. */
export class CopyStoppedError extends Error {
  override readonly name = 'CopyStoppedError';
}

export function isCopyStoppedError(error: unknown): error is CopyStoppedError {
  return error instanceof CopyStoppedError;
}

/**
 * Aborts on the kubelet's deadline or when the client goes away, whichever comes first. A timer of
 * its own, cleared by `stop`: a signal from AbortSignal.timeout that only AbortSignal.any refers
 * to can be collected before it fires, and the copy would then run past its deadline.
 */
function copyDeadline(res: ServerResponse, timeoutMs: number): { readonly signal: AbortSignal; readonly stop: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new CopyStoppedError('context deadline exceeded'));
  }, timeoutMs);
  const onClose = (): void => {
    if (!res.writableFinished) controller.abort(new CopyStoppedError('context canceled'));
  };
  res.once('close', onClose);
  return {
    signal: controller.signal,
    stop: () => {
      clearTimeout(timer);
      res.off('close', onClose);
    },
  };
}

async function serveServices(request: RouteRequest, query: NodeLogQuery, options: NodeLogQueryServerOptions): Promise<void> {
  const { req, res } = request;
  const gzip = req.headers['accept-encoding'] === 'gzip';
  res.writeHead(200, { 'Content-Type': 'text/plain;charset=UTF-8', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
  const out: Writable = gzip ? createGzip({ level: zlib.Z_BEST_SPEED }) : res;
  if (gzip) out.pipe(res);
  const deadline = copyDeadline(res, options.copyTimeoutMs ?? QUERY_COPY_TIMEOUT_MS);
  try {
    if (hasOptions(query.options)) out.write(optionsWithFilesNote(query.services));
    else {
      // No directory: no candidate exists (Go's open of the root fails with "not exist" too).
      const root = await realpath(options.dir).catch(() => undefined);
      for (const service of query.services) {
        if (root === undefined) out.write(`\nlog not found for ${service}\n`);
        else await copyServiceLog({ out, root, service, signal: deadline.signal });
      }
    }
  } finally {
    deadline.stop();
    out.end();
  }
  if (!res.destroyed) await finished(res).catch(() => undefined);
}

interface ServiceCopy {
  readonly out: Writable;
  /** The log directory's real path. */
  readonly root: string;
  readonly service: string;
  readonly signal: AbortSignal;
}

/** The kubelet's text for a stopped copy: its context's error. */
function abortText(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return isCopyStoppedError(reason) ? reason.message : 'context canceled';
}

/** Copies the first candidate of `service` that is a file; writes why when there is none. */
async function copyServiceLog(copy: ServiceCopy): Promise<void> {
  const { out, root, service, signal } = copy;
  for (const candidate of serviceLogCandidates(service)) {
    try {
      const entry = await lookupInRoot(root, candidate, 'openat', signal);
      // A directory (logs of foo may be in foo/) or a special file is not the log: the next candidate.
      if (!entry.stats.isFile()) continue;
      const handle = await openFoundFile(root, entry);
      if (handle === undefined) continue;
      await streamFile(handle, out, signal);
      return;
    } catch (error) {
      if (isRootPathError(error) && error.notExist) continue;
      const why = signal.aborted ? abortText(signal) : isRootPathError(error) ? error.message : error instanceof Error ? error.message : String(error);
      out.write(`\nerror getting log for ${service}: ${why}\n`);
      return;
    }
  }
  out.write(`\nlog not found for ${service}\n`);
}

/** Streams the file to its end with backpressure; closes it. @throws on abort or a read error. */
async function streamFile(handle: FileHandle, out: Writable, signal: AbortSignal): Promise<void> {
  try {
    // Chunks as they are read: a multi-GB log never sits in memory.
    for await (const chunk of handle.createReadStream({ autoClose: false, signal })) {
      if (!out.write(chunk)) await once(out, 'drain', { signal });
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}
