/**
 * The node server's paths, matched after authentication and authorization. Each route is a
 * handler of a matched request. An HTTP upgrade request (exec, attach, port-forward) comes with
 * its socket: its `res` writes to that socket, so refusals are answered like any other request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** The connection of an upgrade request, for a handler that takes it over. */
export interface UpgradeSocket {
  readonly socket: Duplex;
  /** Bytes the client sent past its request head. */
  readonly head: Buffer;
  /** Unbinds `res` from the socket: from then on the handler writes raw bytes. */
  readonly take: () => void;
}

/** A request that matched a route, with the path's parameters. */
export interface RouteRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  /** Present only for an HTTP upgrade request. */
  readonly upgrade?: UpgradeSocket;
}

/** Serves one matched request. */
export type RouteHandler = (request: RouteRequest) => Promise<void>;

/**
 * One path pattern: `{}` segments capture (non-empty, URL-decoded); a last segment `{*}` captures
 * the rest of the path, slashes and all, possibly empty (URL-decoded: `%2F` is a slash, as in Go's
 * `URL.Path`).
 */
export interface Route {
  readonly method: string;
  readonly pattern: string;
  readonly handler: RouteHandler;
  /**
   * The kubelet's `GETOnlyRestfulFilter` (1.37; its read-only APIs `/pods`, `/containerLogs`,
   * `/logs`): any other method, HEAD included, is a 405 with `Allow: GET`.
   */
  readonly getOnly?: boolean;
}

/** A path segment that is not valid percent-encoding (Go's server refuses the request: 400). */
export class BadPathError extends Error {
  override readonly name = 'BadPathError';
}

export function isBadPathError(err: unknown): err is BadPathError {
  return err instanceof BadPathError;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new BadPathError(`invalid URL escape in "${segment}"`);
  }
}

function matchPattern(pattern: string, path: string): string[] | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.at(-1) === '{*}') {
    if (got.length < want.length) return undefined;
    const head = matchPattern(want.slice(0, -1).join('/'), got.slice(0, want.length - 1).join('/'));
    return head === undefined ? undefined : [...head, decode(got.slice(want.length - 1).join('/'))];
  }
  if (want.length !== got.length) return undefined;
  const params: string[] = [];
  for (const [i, part] of want.entries()) {
    const actual = got[i] ?? '';
    if (part === '{}') {
      if (actual === '') return undefined;
      params.push(decode(actual));
    } else if (part !== actual) {
      return undefined;
    }
  }
  return params;
}

/** The result of looking a request up. */
export type RouteMatch =
  | { readonly kind: 'found'; readonly handler: RouteHandler; readonly params: string[] }
  | { readonly kind: 'not-found' }
  /** `allow`: the methods to name in the `Allow` header, when the route's filter names them. */
  | { readonly kind: 'method-not-allowed'; readonly allow?: string };

/**
 * The route for `method` and `path`; a path served for other methods only is 405, as go-restful
 * answers. @throws BadPathError when a captured segment is not valid percent-encoding.
 */
export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch {
  let pathKnown = false;
  for (const route of routes) {
    const params = matchPattern(route.pattern, path);
    if (params === undefined) continue;
    pathKnown = true;
    if (route.getOnly === true && method !== 'GET') return { kind: 'method-not-allowed', allow: 'GET' };
    if (route.method === method || (route.method === 'GET' && method === 'HEAD')) return { kind: 'found', handler: route.handler, params };
  }
  return { kind: pathKnown ? 'method-not-allowed' : 'not-found' };
}

/** A plain-text answer, as the kubelet's `WriteErrorString`. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
