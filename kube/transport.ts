/**
 * HTTPS to the API server: JSON requests and line-delimited watch streams over one keep-alive
 * connection pool, as client-go keeps one transport per cluster and credentials.
 *
 * Why not client-node's generated API: loading its index costs the agent about 45 MiB of resident
 * memory (every API group's request factories, every model, undici, auth plugins; `npm run
 * bench:modules`), and in a profile of a 110-pod batch its request path (middleware, promise
 * layers, undici writing each body in pieces) was 31% of the agent's busy CPU (docs/benchmarks.md).
 * This client sends each request as one buffer on a kept-alive socket and parses the answer once.
 *
 * The pool is keyed by what the TLS connection is made of (the endpoint and the modification time
 * of any CA, certificate or key read from a file, checked at most once a second), so a rotated
 * certificate gets a new pool; the old one's idle sockets are closed and its requests finish.
 * Bearer tokens are set per request; a token file is re-read once a minute.
 *
 * A {@link RequestRateLimiter} (the kubelet's `--kube-api-qps`/`--kube-api-burst`, rate-limit.ts)
 * holds each request until it has a token, before the request is sent; watches are not held, as
 * client-go does not hold them.
 */
import { readFileSync, statSync } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { KubeApiError } from '../util/api-errors.js';
import { systemClock, type Clock, type TimerHandle } from '../util/clock.js';
import type { KubeEndpoint, Material } from './kubeconfig.js';
import type { RequestRateLimiter } from './rate-limit.js';

/** Query parameters; undefined values are left out. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** One API request. */
export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path below the server, e.g. `/api/v1/namespaces/default/pods`; segments already encoded. */
  readonly path: string;
  readonly query?: Query;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** The body's media type; `application/json` unless a patch says otherwise. */
  readonly contentType?: string;
  /** Also ends the wait for a rate-limit token. */
  readonly signal?: AbortSignal;
  /**
   * The limiter this request counts against instead of the transport's; `none`: not limited (the
   * kubelet's heartbeat client shares the connection but not the rate limit).
   */
  readonly rateLimiter?: RequestRateLimiter | 'none';
}

/** What a watch delivers: one event, or its end (an error, or undefined when the server closed it). */
export interface WatchHandlers {
  onEvent(type: string, object: unknown): void;
  /** Called once, unless the caller aborted the watch itself. */
  onDone(err: unknown): void;
}

/** A watch whose stream went quiet for longer than its inactivity limit. */
export class WatchTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** How long a watch may stay silent before it is dropped (client-node's and client-go's 30 s). */
export const WATCH_INACTIVITY_MS = 30_000;
const TOKEN_REFRESH_MS = 60_000;
const STAMP_CHECK_MS = 1000;
/**
 * A request whose socket is silent this long fails (undici, behind client-node, bounded headers and
 * body at 300 s; a hung API server must not hold a status write forever). Watches have their own
 * inactivity limit instead.
 */
export const REQUEST_IDLE_TIMEOUT_MS = 60_000;
/**
 * Idle kept-alive sockets close after this long, well before the API server drops them (a request
 * sent on a socket the server is closing fails with ECONNRESET).
 */
const FREE_SOCKET_TIMEOUT_MS = 30_000;
const POOL = { keepAlive: true, maxFreeSockets: 8, timeout: FREE_SOCKET_TIMEOUT_MS } as const;

/**
 * One request to the API server as client-go's `rest_client_*` metrics see it: `code` is the
 * HTTP status, or `<error>` when no answer came (client-go's label for any transport error).
 */
export interface KubeRequestSample {
  readonly method: KubeRequest['method'];
  /** `host:port` of the API server, as client-go's `URL.Host`. */
  readonly host: string;
  readonly code: string;
  /**
   * From the request's start (its wait for a rate-limit token included, as client-go starts the
   * clock before `tryThrottle`) to its answer's end (request) or to the answer's headers (watch).
   */
  readonly seconds: number;
  /** The body's bytes, 0 without a body (client-go observes 0 for a GET). */
  readonly requestBytes: number;
  /** The answer's body bytes; absent when no body was read (no answer, a watch). */
  readonly responseBytes?: number;
  /** A watch: client-go counts it in `rest_client_requests_total` only. */
  readonly watch: boolean;
}

/** One request's wait for a rate-limit token (client-go's `rest_client_rate_limiter_duration_seconds`). */
export interface KubeRateLimitSample {
  readonly method: KubeRequest['method'];
  /** `host:port` of the API server. */
  readonly host: string;
  /** How long the request waited for its token; 0 when one was there. */
  readonly seconds: number;
}

/** Receives every request's outcome (the node's `rest_client_*`); must not throw. */
export interface KubeRequestMetrics {
  requestDone(sample: KubeRequestSample): void;
  /** A rate-limited request got its token, or gave up waiting (aborted); not called without a limiter. */
  rateLimited(sample: KubeRateLimitSample): void;
}

/** How a transport bounds its requests. */
export interface KubeTransportLimits {
  /** A request whose socket is silent this long fails; default {@link REQUEST_IDLE_TIMEOUT_MS}. */
  readonly requestIdleTimeoutMs?: number;
  readonly metrics?: KubeRequestMetrics;
  /** Every request waits for a token of it (unless the request names another); absent: no limit. */
  readonly rateLimiter?: RequestRateLimiter;
}

/** A request got no byte from the API server for {@link REQUEST_IDLE_TIMEOUT_MS}. */
export class KubeRequestTimeoutError extends Error {
  override readonly name = 'KubeRequestTimeoutError';
}
const USER_AGENT = 'nodelet';

function fileStamp(file: string): string {
  try {
    const stat = statSync(file);
    return `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return '';
  }
}

function read(m: Material | undefined): Buffer | undefined {
  if (m === undefined) return undefined;
  return 'data' in m ? m.data : readFileSync(m.file);
}

function materialStamp(m: Material | undefined): string {
  return m === undefined || 'data' in m ? '' : fileStamp(m.file);
}

function queryString(query: Query | undefined): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const s = params.toString();
  return s === '' ? '' : `?${s}`;
}

function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const textBody = raw.toString('utf8');
  if (contentType !== undefined && !contentType.includes('json')) return textBody;
  try {
    return JSON.parse(textBody) as unknown;
  } catch {
    return textBody;
  }
}

/** The connection to one API server. */
export class KubeTransport {
  private pool: { readonly key: string; readonly agent: http.Agent } | undefined;
  private stampCheckedAt = Number.NEGATIVE_INFINITY;
  private token: { readonly value: string | undefined; readonly readAt: number } | undefined;
  private readonly url: URL;
  /** Plain HTTP only when the kubeconfig says so (a test server); everything else is TLS. */
  private readonly plain: boolean;
  private readonly requestIdleTimeoutMs: number;
  private readonly metrics: KubeRequestMetrics | undefined;
  private readonly rateLimiter: RequestRateLimiter | undefined;

  constructor(
    readonly endpoint: KubeEndpoint,
    private readonly clock: Clock = systemClock,
    limits: KubeTransportLimits = {},
  ) {
    this.url = new URL(endpoint.server);
    this.plain = this.url.protocol === 'http:';
    this.requestIdleTimeoutMs = limits.requestIdleTimeoutMs ?? REQUEST_IDLE_TIMEOUT_MS;
    this.metrics = limits.metrics;
    this.rateLimiter = limits.rateLimiter;
  }

  /**
   * Sends a request once it has a rate-limit token; resolves with the parsed JSON answer, rejects
   * with {@link KubeApiError} outside 2xx, or with the signal's reason when it aborts first.
   */
  async request<T>(req: KubeRequest): Promise<T> {
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const startedMs = this.clock.now();
    await this.throttle(req);
    const sample = { method: req.method, requestBytes: payload?.length ?? 0, watch: false };
    let response: IncomingMessage;
    let raw: Buffer;
    try {
      response = await this.send({ method: req.method, path: req.path + queryString(req.query), payload, contentType: req.contentType, signal: req.signal });
      raw = await collect(response);
    } catch (error) {
      this.record({ ...sample, code: '<error>', startedMs });
      throw error;
    }
    const status = response.statusCode ?? 0;
    this.record({ ...sample, code: String(status), startedMs, responseBytes: raw.length });
    const body = parseBody(raw, response.headers['content-type']);
    if (status < 200 || status >= 300) throw new KubeApiError(status, body, `${req.method} ${req.path}`);
    return body as T;
  }

  /** Waits for the request's token, if it is limited; the wait is observed however it ends. */
  private async throttle(req: KubeRequest): Promise<void> {
    const limiter = req.rateLimiter ?? this.rateLimiter;
    if (limiter === undefined || limiter === 'none') return;
    const startedMs = this.clock.now();
    try {
      await limiter.wait(req.path, req.signal);
    } finally {
      this.observe(() => { this.metrics?.rateLimited({ method: req.method, host: this.url.host, seconds: Math.max(0, this.clock.now() - startedMs) / 1000 }); });
    }
  }

  /** Hands one sample to the metrics, which must never fail the request. */
  private observe(report: () => void): void {
    try {
      report();
    } catch {
      // A metrics fault must not fail an API call.
    }
  }

  /** Hands one request's outcome to the metrics, which must never fail the request. */
  private record(done: Omit<KubeRequestSample, 'host' | 'seconds'> & { readonly startedMs: number }): void {
    if (this.metrics === undefined) return;
    const { startedMs, ...rest } = done;
    const metrics = this.metrics;
    this.observe(() => { metrics.requestDone({ ...rest, host: this.url.host, seconds: Math.max(0, this.clock.now() - startedMs) / 1000 }); });
  }

  /**
   * Opens a watch (`watch=true` is added). Resolves once the server answered, with a controller
   * that ends the watch without calling `onDone`; a refusal or a failure to connect is reported
   * through `onDone` (a {@link KubeApiError} carries the status), as is the stream's end.
   */
  async watch(path: string, query: Query, handlers: WatchHandlers): Promise<AbortController> {
    const controller = new AbortController();
    const state = { done: false, timer: undefined as TimerHandle | undefined, timedOut: false };
    const finish = (err: unknown): void => {
      if (state.done) return;
      state.done = true;
      if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
      if (!controller.signal.aborted || state.timedOut) handlers.onDone(state.timedOut ? new WatchTimeoutError(`watch inactive for ${WATCH_INACTIVITY_MS} ms`) : err);
      if (!controller.signal.aborted) controller.abort();
    };
    const arm = (): void => {
      if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
      state.timer = this.clock.setTimeout(() => {
        state.timedOut = true;
        controller.abort();
        finish(undefined);
      }, WATCH_INACTIVITY_MS);
    };
    controller.signal.addEventListener('abort', () => { finish(undefined); }, { once: true });
    arm();
    const startedMs = this.clock.now();
    let answered = false;
    try {
      const response = await this.send({ method: 'GET', path: path + queryString({ ...query, watch: true }), signal: controller.signal, watch: true });
      answered = true;
      this.record({ method: 'GET', code: String(response.statusCode ?? 0), requestBytes: 0, watch: true, startedMs });
      if (response.statusCode !== 200) {
        const body = parseBody(await collect(response), response.headers['content-type']);
        finish(new KubeApiError(response.statusCode ?? 0, body, `WATCH ${path}`));
        return controller;
      }
      arm();
      streamLines(response, (line) => {
        arm();
        const event = parseEvent(line);
        if (event !== undefined && !state.done) handlers.onEvent(event.type, event.object);
      }, finish);
    } catch (err: unknown) {
      if (!answered) this.record({ method: 'GET', code: '<error>', requestBytes: 0, watch: true, startedMs });
      finish(err);
    }
    return controller;
  }

  /** Closes the pool's idle sockets; requests in flight finish. */
  close(): void {
    this.pool?.agent.destroy();
    this.pool = undefined;
  }

  private send(out: { method: string; path: string; payload?: Buffer | undefined; contentType?: string | undefined; signal?: AbortSignal | undefined; watch?: boolean }): Promise<IncomingMessage> {
    const { method, payload, contentType, signal } = out;
    const headers: Record<string, string | number> = { Accept: 'application/json', 'User-Agent': USER_AGENT };
    const token = this.bearerToken();
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    if (payload !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    return new Promise((resolve, reject) => {
      const request = this.plain ? http.request : https.request;
      const req = request(
        { protocol: this.url.protocol, hostname: this.url.hostname.replace(/^\[|\]$/g, ''), port: this.url.port || (this.plain ? 80 : 443), method, path: this.url.pathname.replace(/\/$/, '') + out.path, headers, agent: this.agent(), ...(signal === undefined ? {} : { signal }) },
        resolve,
      );
      req.on('error', reject);
      if (!out.watch) {
        const ms = this.requestIdleTimeoutMs;
        req.setTimeout(ms, () => req.destroy(new KubeRequestTimeoutError(`${method} ${out.path}: no answer from the API server for ${ms} ms`)));
      }
      req.end(payload);
    });
  }

  private bearerToken(): string | undefined {
    if (this.endpoint.token !== undefined) return this.endpoint.token;
    const file = this.endpoint.tokenFile;
    if (file === undefined) return undefined;
    const now = this.clock.now();
    if (this.token !== undefined && now - this.token.readAt < TOKEN_REFRESH_MS) return this.token.value;
    let value = this.token?.value;
    try {
      value = readFileSync(file, 'utf8').trim();
    } catch {
      // Keep the last token: a rotation in progress must not drop credentials.
    }
    this.token = { value, readAt: now };
    return value;
  }

  private agent(): http.Agent {
    const now = this.clock.now();
    if (this.pool !== undefined && now - this.stampCheckedAt < STAMP_CHECK_MS) return this.pool.agent;
    this.stampCheckedAt = now;
    const { ca, clientCert, clientKey } = this.endpoint;
    const key = [materialStamp(ca), materialStamp(clientCert), materialStamp(clientKey)].join('|');
    if (this.pool?.key === key) return this.pool.agent;
    // Read before the old pool is touched: a missing file leaves it as it was, to try again.
    const caBytes = read(ca);
    const cert = read(clientCert);
    const keyBytes = read(clientKey);
    if (this.pool !== undefined) closeIdleSockets(this.pool.agent);
    if (this.plain) {
      this.pool = { key, agent: new http.Agent(POOL) };
      return this.pool.agent;
    }
    const agent = new https.Agent({
      ...POOL,
      rejectUnauthorized: !this.endpoint.insecureSkipTlsVerify,
      ...(caBytes === undefined ? {} : { ca: caBytes }),
      ...(cert === undefined ? {} : { cert }),
      ...(keyBytes === undefined ? {} : { key: keyBytes }),
      ...(this.endpoint.tlsServerName === undefined ? {} : { servername: this.endpoint.tlsServerName }),
    });
    this.pool = { key, agent };
    return agent;
  }
}

/**
 * Closes a replaced pool's idle sockets. Its busy ones (requests, watches) finish on the old
 * credentials; a watch ends within its timeout and reconnects through the new pool.
 */
function closeIdleSockets(agent: http.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

function collect(response: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => { resolve(Buffer.concat(chunks)); });
    response.on('error', reject);
    // A connection lost mid-body closes without 'end' (resolve after 'end' is a no-op).
    response.on('close', () => {
      if (!response.complete) reject(new Error('API response ended early'));
    });
  });
}

/** Splits a response into lines; `end` gets the stream's error, or undefined at its end. */
function streamLines(response: IncomingMessage, onLine: (line: string) => void, end: (err: unknown) => void): void {
  let pending = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim() !== '') onLine(line);
      newline = pending.indexOf('\n');
    }
  });
  response.on('end', () => {
    if (pending.trim() !== '') onLine(pending);
    end(undefined);
  });
  response.on('error', end);
  response.on('close', () => { end(undefined); });
}

function parseEvent(line: string): { type: string; object: unknown } | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || !('type' in value) || typeof value.type !== 'string') return undefined;
    return { type: value.type, object: 'object' in value ? value.object : undefined };
  } catch {
    return undefined;
  }
}
