/**
 * `/logs/`: the node's log directory (the kubelet's `/var/log/`), read-only, as the kubelet serves it
 * with Go's `http.StripPrefix("/logs/", http.FileServer(http.Dir("/var/log/")))`: a directory is an
 * HTML listing (`<a href="name">name</a>`, sorted, directories with a trailing `/`), a file its
 * bytes; a directory asked for without its trailing slash is a 301 to `name/`, a file asked for with
 * one a 301 to `../name`; missing is 404 `404 page not found`, unreadable 403 `403 Forbidden`.
 *
 * The node log query (`/logs/?query=…`; the NodeLogQuery gate is GA and locked on since v1.36) is
 * served only when KubeletConfiguration `enableSystemLogQuery` (nodelet: `--enable-system-log-query`)
 * is true, by node-log-query-server.ts, which falls back to this file server. With it false, as by
 * default, the kubelet's file server ignores the query string, and so does this.
 *
 * Stricter than Go's `http.Dir`, which follows symbolic links anywhere: the path is cleaned as Go
 * cleans it (`..` cannot climb above the root), then resolved with its links, and anything whose
 * real path is not under the root's real path is 404, as if absent. Only directories and regular
 * files are served (a FIFO would block a read forever; a device has no end): others are 404. The
 * file is opened without following a last-moment link (`O_NOFOLLOW`), never blocking
 * (`O_NONBLOCK`), and must be the very file that was checked (same device and inode). Its bytes are
 * streamed with backpressure, up to the size it had when opened (a log that grows meanwhile does not
 * make the answer longer than its `Content-Length`).
 */
import { constants, type Stats } from 'node:fs';
import { open, opendir, realpath, stat, type FileHandle } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { sendText, type RouteRequest } from './routes.js';

/** Where `/logs/` reads. */
export interface NodeLogsOptions {
  /** The served directory (default /var/log, the kubelet's). */
  readonly dir: string;
}

/** What a request names, once cleaned and resolved. */
type Resolved =
  | { readonly kind: 'dir'; readonly real: string; readonly stats: Stats }
  | { readonly kind: 'file'; readonly real: string; readonly stats: Stats }
  | { readonly kind: 'missing' }
  | { readonly kind: 'forbidden' };

function errnoCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** A failed file system call as an answer: absent (and anything unexpected) 404, unreadable 403. */
function failure(error: unknown): Resolved {
  const code = errnoCode(error);
  return code === 'EACCES' || code === 'EPERM' ? { kind: 'forbidden' } : { kind: 'missing' };
}

/** True when `real` is `root` or below it. */
function within(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/** The request's path under the root, cleaned as Go's `path.Clean("/" + name)`; undefined for a NUL. */
export function cleanLogPath(name: string): string | undefined {
  if (name.includes('\0')) return undefined;
  const clean = path.posix.normalize(`/${name}`);
  return clean.length > 1 && clean.endsWith('/') ? clean.slice(0, -1) : clean;
}

async function resolve(rootDir: string, clean: string): Promise<Resolved> {
  try {
    const root = await realpath(rootDir);
    const real = await realpath(path.join(root, clean));
    if (!within(root, real)) return { kind: 'missing' };
    const stats = await stat(real);
    if (stats.isDirectory()) return { kind: 'dir', real, stats };
    return stats.isFile() ? { kind: 'file', real, stats } : { kind: 'missing' };
  } catch (error) {
    return failure(error);
  }
}

/** Go's `url.URL{Path: name}.String()`: a path with what a path may not hold percent-encoded. */
function hrefOf(name: string): string {
  const escaped = name.replace(/[^A-Za-z0-9\-_.~!$&'()*+,;=:@/]/gu, (c) => encodeURIComponent(c));
  // A first segment with a colon would read as a scheme: Go prefixes "./".
  const first = escaped.split('/')[0] ?? '';
  return first.includes(':') ? `./${escaped}` : escaped;
}

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };

async function listing(dir: string): Promise<string> {
  const names: string[] = [];
  const handle = await opendir(dir);
  // Entries as Go's ReadDir sees them: a link is not a directory, whatever it points to.
  for await (const entry of handle) names.push(entry.isDirectory() ? `${entry.name}/` : entry.name);
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const rows = names.map((n) => `<a href="${hrefOf(n)}">${n.replace(/[&<>"']/gu, (c) => HTML_ESCAPES[c] ?? c)}</a>\n`);
  return `<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n${rows.join('')}</pre>\n`;
}

/** Go's content sniffing, reduced to what a log directory holds: gzip, binary, or text. */
export function sniffContentType(head: Buffer): string {
  if (head.length >= 3 && head[0] === 0x1f && head[1] === 0x8b && head[2] === 0x08) return 'application/x-gzip';
  // Go's sniffer calls data binary when it holds a control byte other than tab, newline, form feed, return, escape.
  for (const byte of head) if (byte <= 0x08 || byte === 0x0b || (byte >= 0x0e && byte <= 0x1a) || (byte >= 0x1c && byte <= 0x1f)) return 'application/octet-stream';
  return 'text/plain; charset=utf-8';
}

/** Opens `real`, the file `checked` was read from, or undefined when it was swapped meanwhile. */
async function openChecked(real: string, checked: Stats): Promise<FileHandle | undefined> {
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const now = await handle.stat();
  if (now.isFile() && now.ino === checked.ino && now.dev === checked.dev) return handle;
  await handle.close();
  return undefined;
}

async function serveFile(res: ServerResponse, real: string, checked: Stats): Promise<void> {
  const handle = await openChecked(real, checked);
  if (handle === undefined) {
    sendText(res, 404, '404 page not found');
    return;
  }
  try {
    const size = (await handle.stat()).size;
    const head = Buffer.alloc(Math.min(512, size));
    await handle.read(head, 0, head.length, 0);
    res.writeHead(200, { 'Content-Type': sniffContentType(head), 'Content-Length': size, 'Last-Modified': checked.mtime.toUTCString() });
    // GET only (the route's filter answers every other method, HEAD included, with 405).
    if (size === 0) {
      res.end();
      return;
    }
    // The stream closes the handle; pipeline waits for the client (backpressure) and ends both on error.
    await pipeline(handle.createReadStream({ start: 0, end: size - 1 }), res).catch((error: unknown) => {
      // A client that went away is no server error: the stream and its handle are closed already.
      if (!res.destroyed) throw error;
    });
  } finally {
    // Closing twice is harmless: a handle the stream already closed rejects, which is ignored.
    await handle.close().catch(() => undefined);
  }
}

/** The raw query string of a request URL (after `?`), as Go's `URL.RawQuery`. */
export function rawQueryOf(url: string | undefined): string {
  const at = (url ?? '').indexOf('?');
  return at === -1 ? '' : (url ?? '').slice(at + 1);
}

/** Go's localRedirect: the request's raw query string carried over as it came. */
function redirect(res: ServerResponse, location: string, url: string | undefined): void {
  const search = rawQueryOf(url);
  res.writeHead(301, { Location: search === '' ? location : `${location}?${search}` });
  res.end();
}

async function serveDir(res: ServerResponse, dir: { real: string; stats: Stats }): Promise<void> {
  try {
    const html = await listing(dir.real);
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(html), 'Last-Modified': dir.stats.mtime.toUTCString() });
    res.end(html);
  } catch (error) {
    const forbidden = failure(error).kind === 'forbidden';
    sendText(res, forbidden ? 403 : 404, forbidden ? '403 Forbidden' : '404 page not found');
  }
}

/** Serves `GET /logs/{path…}`; see this file's header. */
export async function serveNodeLogs(request: RouteRequest, options: NodeLogsOptions): Promise<void> {
  const { res, req } = request;
  const name = request.params[0] ?? '';
  const clean = cleanLogPath(name);
  const target = clean === undefined ? ({ kind: 'missing' } as const) : await resolve(options.dir, clean);
  const slash = name === '' || name.endsWith('/');
  const base = path.posix.basename(clean ?? '');
  switch (target.kind) {
    case 'missing':
      sendText(res, 404, '404 page not found');
      return;
    case 'forbidden':
      sendText(res, 403, '403 Forbidden');
      return;
    case 'dir':
      if (slash) await serveDir(res, target);
      else redirect(res, `${base}/`, req.url);
      return;
    case 'file':
      if (slash) redirect(res, `../${base}`, req.url);
      else await serveFile(res, target.real, target.stats);
  }
}
