/**
 * Proxies a client's HTTP upgrade (SPDY or WebSocket) to the runtime's streaming URL, as the
 * kubelet's `UpgradeAwareHandler` does for exec, attach and port-forward:
 * 1. The URL must be plain HTTP on a loopback address (containerd's default stream address is
 *    127.0.0.1): the node server never dials anywhere else.
 * 2. It connects, sends the request line with the URL's path and query and only the client's
 *    upgrade headers (`Connection`, `Upgrade`, `X-Stream-Protocol-Version`, `Sec-WebSocket-*`,
 *    `Origin`): never its credentials. Bytes the client sent after its head follow.
 * 3. It reads the runtime's response head. A 101 is relayed byte for byte and then both sockets
 *    are piped both ways (streamed with backpressure, never buffered) until either closes; an
 *    error on either side tears both down. A 4xx/5xx answer is relayed with its body and both
 *    sides closed; any other status is the kubelet's `invalid upgrade response: status code N`.
 * Failing before the client's socket was written to throws `UpgradeProxyError` for a 500 answer.
 */
import { isIP, connect, type Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../util/clock.js';
import { isTimeoutError, withTimeout } from '../util/timeout.js';

/** The proxy could not reach the runtime or the runtime did not upgrade; answered 500 with the message. */
export class UpgradeProxyError extends Error {
  override readonly name = 'UpgradeProxyError';
}

export function isUpgradeProxyError(err: unknown): err is UpgradeProxyError {
  return err instanceof UpgradeProxyError;
}

/** Where the runtime streams: host, port and the request target (path and query). */
export interface StreamingTarget {
  readonly host: string;
  readonly port: number;
  readonly path: string;
}

function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1';
  return false;
}

/** The runtime's URL, checked: `http:` on a loopback IP only. @throws UpgradeProxyError */
export function streamingTarget(url: string): StreamingTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UpgradeProxyError(`the runtime returned an invalid streaming URL "${url}"`);
  }
  if (parsed.protocol !== 'http:') throw new UpgradeProxyError(`the runtime's streaming URL "${url}" is not plain http (TLS streaming is not supported)`);
  if (!isLoopback(parsed.hostname)) throw new UpgradeProxyError(`the runtime's streaming URL "${url}" is not on a loopback address: not dialled`);
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host, port: Number(parsed.port || '80'), path: `${parsed.pathname}${parsed.search}` };
}

const FORWARDED = new Set(['connection', 'upgrade', 'x-stream-protocol-version', 'origin']);

function forwarded(name: string): boolean {
  const lower = name.toLowerCase();
  return FORWARDED.has(lower) || lower.startsWith('sec-websocket-');
}

/** The request head sent to the runtime (every value of each forwarded header, in the client's order). */
export function upgradeRequestHead(method: string, rawHeaders: readonly string[], target: StreamingTarget): string {
  const hostHeader = isIP(target.host) === 6 ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
  const lines = [`${method} ${target.path} HTTP/1.1`, `Host: ${hostHeader}`];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? '';
    const value = rawHeaders[i + 1] ?? '';
    // A header must not smuggle a line break into the head (Node rejects them already; be sure).
    if (forwarded(name) && !/[\r\n]/.test(value)) lines.push(`${name}: ${value}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A parsed response head: status, where the head ends, and the body length when declared. */
export interface ResponseHead {
  readonly status: number;
  readonly headLength: number;
  readonly contentLength: number | undefined;
}

/** The response head at the start of `buf`, or `undefined` while it is incomplete. @throws UpgradeProxyError */
export function parseResponseHead(buf: Buffer): ResponseHead | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '')?.[1];
  if (status === undefined) throw new UpgradeProxyError(`malformed HTTP response from the runtime: ${JSON.stringify(lines[0])}`);
  const length = lines.find((l) => /^content-length:/i.test(l))?.split(':')[1]?.trim();
  return { status: Number(status), headLength: end + 4, contentLength: length === undefined || !/^\d+$/.test(length) ? undefined : Number(length) };
}

/** How the proxy waits. */
export interface ProxyOptions {
  readonly clock: Clock;
  /** For connecting and for the runtime's response head; also how long a refused answer's body may take. */
  readonly timeoutMs: number;
}

/** `work` within the proxy's time limit; past it `onTimeout` runs and the wait fails as `what`. */
async function bounded<T>(work: Promise<T>, options: ProxyOptions, what: string, onTimeout: () => void): Promise<T> {
  try {
    return await withTimeout(work, { ...options, what });
  } catch (error) {
    if (!isTimeoutError(error)) throw error;
    onTimeout();
    throw new UpgradeProxyError(error.message);
  }
}

function dial(target: StreamingTarget): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port });
    const onError = (error: Error): void => {
      reject(new UpgradeProxyError(`error dialing the runtime's streaming server ${target.host}:${target.port}: ${error.message}`));
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      socket.off('error', onError);
      // Never unhandled, whatever phase the proxy is in: an error ends this connection ('close' follows).
      socket.on('error', () => {
        socket.destroy();
      });
      resolve(socket);
    });
  });
}

/** Reads until the response head is complete; resolves with it and every byte read so far. */
function readHead(backend: Socket): Promise<{ head: ResponseHead; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    let bytes = Buffer.alloc(0);
    const cleanup = (): void => {
      backend.off('data', onData);
      backend.off('end', onEnd);
      backend.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      bytes = Buffer.concat([bytes, chunk]);
      try {
        const head = parseResponseHead(bytes);
        if (head === undefined) return;
        cleanup();
        backend.pause();
        resolve({ head, bytes });
      } catch (error) {
        cleanup();
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const onEnd = (): void => {
      cleanup();
      reject(new UpgradeProxyError('the runtime closed the connection before answering the upgrade'));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new UpgradeProxyError(`error reading the runtime's upgrade response: ${error.message}`));
    };
    backend.on('data', onData);
    backend.once('end', onEnd);
    backend.once('error', onError);
  });
}

/** Pipes both ways until either side closes; an error destroys both. Resolves when both are closed. */
export function pipeBothWays(client: Duplex, backend: Duplex): Promise<void> {
  return new Promise<void>((resolve) => {
    let open = 2;
    const closed = (): void => {
      open -= 1;
      if (open === 0) resolve();
    };
    const destroyBoth = (): void => {
      client.destroy();
      backend.destroy();
    };
    client.once('close', () => {
      // Nobody is left to read what the runtime sends: let it go at once.
      backend.destroy();
      closed();
    });
    backend.once('close', () => {
      // What the runtime sent last is still queued for the client: end (flush), then close.
      client.end();
      closed();
    });
    client.on('error', destroyBoth);
    backend.on('error', destroyBoth);
    client.pipe(backend);
    backend.pipe(client);
    backend.resume();
  });
}

/** Relays a refused upgrade's body (its declared length, else until the runtime closes), then closes both. */
async function relayRefusal(sockets: { client: Duplex; backend: Socket }, rest: Buffer, head: ResponseHead, options: ProxyOptions): Promise<void> {
  const { client, backend } = sockets;
  const expected = head.contentLength;
  let remaining = expected === undefined ? Number.POSITIVE_INFINITY : expected - rest.length;
  const done = new Promise<void>((resolve) => {
    if (remaining <= 0) {
      resolve();
      return;
    }
    backend.on('data', (chunk: Buffer) => {
      const piece = chunk.subarray(0, Math.min(chunk.length, remaining));
      client.write(piece);
      remaining -= piece.length;
      if (remaining <= 0) resolve();
    });
    backend.once('close', () => {
      resolve();
    });
    backend.resume();
  });
  try {
    await bounded(done, options, "the runtime's refusal", () => undefined);
  } catch {
    // The status line went out already; what the body lacks cannot be told to the client.
  } finally {
    backend.destroy();
    client.end();
  }
}

/** A client's upgrade request, with its socket and the bytes read past its head. */
export interface UpgradeClient {
  readonly req: IncomingMessage;
  readonly socket: Duplex;
  readonly head: Buffer;
}

/**
 * Connects the client to `url`; see this file's header. Resolves when the session is over.
 * `takeSocket` runs once, just before the first byte goes to the client's socket.
 * @throws UpgradeProxyError before anything was written to the client.
 */
export async function proxyUpgrade(client: UpgradeClient, url: string, takeSocket: () => void, options: ProxyOptions): Promise<void> {
  const target = streamingTarget(url);
  let gaveUp = false;
  const connected = dial(target).then((socket) => {
    // Connected after the wait was given up: nobody will use it.
    if (gaveUp) socket.destroy();
    return socket;
  });
  const backend = await bounded(connected, options, `the runtime's streaming server ${target.host}:${target.port}`, () => {
    gaveUp = true;
  });
  let answer: { head: ResponseHead; bytes: Buffer };
  try {
    backend.write(upgradeRequestHead(client.req.method ?? 'GET', client.req.rawHeaders, target));
    if (client.head.length > 0) backend.write(client.head);
    answer = await bounded(readHead(backend), options, "the runtime's upgrade response", () => backend.destroy());
  } catch (error) {
    backend.destroy();
    throw error;
  }
  const { head, bytes } = answer;
  if (head.status !== 101 && head.status < 400) {
    backend.destroy();
    throw new UpgradeProxyError(`invalid upgrade response: status code ${head.status}`);
  }
  takeSocket();
  client.socket.write(bytes.subarray(0, head.headLength));
  const rest = bytes.subarray(head.headLength);
  if (head.status !== 101) {
    if (rest.length > 0) client.socket.write(rest.subarray(0, head.contentLength ?? rest.length));
    await relayRefusal({ client: client.socket, backend }, rest, head, options);
    return;
  }
  // Bytes of the new protocol that came with the 101 belong to the client too.
  if (rest.length > 0) client.socket.write(rest);
  await pipeBothWays(client.socket, backend);
}
