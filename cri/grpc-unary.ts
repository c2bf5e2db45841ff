/**
 * A minimal gRPC client for unary calls over HTTP/2 on a unix socket, written on `node:http2`
 * (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md). Every CRI method nodelet
 * calls is unary and the CRI is served on a local socket only, so none of a general gRPC client's
 * machinery (name resolution, load balancing, retries, compression, TLS, streaming) is needed,
 * and grpc-js's cost per call was the largest part of the agent's CPU (docs/benchmarks.md, "Fewer
 * and cheaper runtime calls").
 *
 * Bytes in, bytes out: (de)serialization and the mapping of status codes to error classes belong
 * to the caller (`transport.ts`).
 */
import http2 from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, IncomingHttpStatusHeader } from 'node:http2';
import net from 'node:net';

/** The gRPC status codes this module produces (the numbers are the spec's). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** Largest message sent or accepted (the kubelet's limit, and grpc-js's setting before). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * After a failed dial, calls fail at once for this long instead of dialling again: a runtime that
 * is down is polled every second by many callers (PLEG relist, probes, reconciles), and each of
 * them dialling would be a storm of connection attempts for the same answer.
 */
export const REDIAL_HOLD_OFF_MS = 250;

/** A call's gRPC outcome other than OK: the status code and its message. */
export class GrpcCallError extends Error {
  override name = 'GrpcCallError';
  constructor(
    readonly code: number,
    readonly details: string,
    options?: ErrorOptions,
  ) {
    super(details, options);
  }
}

/** The socket path of a `unix:///path` endpoint (or a bare absolute path); nothing else is supported. */
export function unixSocketPath(endpoint: string): string {
  if (endpoint.startsWith('unix:///')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('/')) return endpoint;
  throw new TypeError(`unsupported CRI endpoint "${endpoint}": expected unix:///absolute/path`);
}

export interface UnaryChannelOptions {
  readonly socketPath: string;
  /** Milliseconds, for the redial hold-off; `Date.now` by default. */
  readonly now?: () => number;
}

/** One unary call, its request already serialized. */
export interface UnaryRequest {
  /** `/package.Service/Method` */
  readonly path: string;
  readonly message: Uint8Array;
  /** The deadline, from now; sent as `grpc-timeout` and enforced locally. */
  readonly timeoutMs: number;
  /** Cancels the call (RST_STREAM CANCEL) and rejects it with CANCELLED. */
  readonly signal?: AbortSignal;
}

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INADEQUATE_SECURITY } = http2.constants;

/** How an HTTP status other than 200 maps to a gRPC code (doc/http-grpc-status-mapping.md). */
const HTTP_STATUS_CODES: Readonly<Record<number, number>> = {
  400: GrpcCode.INTERNAL,
  401: GrpcCode.UNAUTHENTICATED,
  403: GrpcCode.PERMISSION_DENIED,
  404: GrpcCode.UNIMPLEMENTED,
  429: GrpcCode.UNAVAILABLE,
  502: GrpcCode.UNAVAILABLE,
  503: GrpcCode.UNAVAILABLE,
  504: GrpcCode.UNAVAILABLE,
};

/** How a RST_STREAM error code maps to a gRPC code (PROTOCOL-HTTP2.md, "Errors"); INTERNAL otherwise. */
function statusOfReset(rstCode: number): number {
  if (rstCode === NGHTTP2_REFUSED_STREAM) return GrpcCode.UNAVAILABLE;
  if (rstCode === NGHTTP2_CANCEL) return GrpcCode.CANCELLED;
  if (rstCode === NGHTTP2_ENHANCE_YOUR_CALM) return GrpcCode.RESOURCE_EXHAUSTED;
  if (rstCode === NGHTTP2_INADEQUATE_SECURITY) return GrpcCode.PERMISSION_DENIED;
  return GrpcCode.INTERNAL;
}

/** `grpc-timeout`: at most 8 digits, so milliseconds up to about 27 hours, whole seconds beyond. */
function grpcTimeout(ms: number): string {
  const millis = Number.isNaN(ms) ? 0 : Math.max(0, Math.ceil(ms));
  return millis <= 99_999_999 ? `${millis}m` : `${Math.min(99_999_999, Math.ceil(millis / 1000))}S`;
}

/** `grpc-message` is percent-encoded UTF-8; a malformed encoding is shown as sent rather than lost. */
function decodeGrpcMessage(value: string | string[] | undefined): string {
  const raw = Array.isArray(value) ? value.join(',') : (value ?? '');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A parsed `grpc-status`/`grpc-message` pair, or undefined when the headers carry no status. */
function statusOf(headers: IncomingHttpHeaders | undefined): GrpcCallError | { code: 0 } | undefined {
  const value = headers?.['grpc-status'];
  if (typeof value !== 'string') return undefined;
  const code = /^\d+$/.test(value) ? Number(value) : GrpcCode.UNKNOWN;
  if (code === GrpcCode.OK) return { code: 0 };
  return new GrpcCallError(code, decodeGrpcMessage(headers?.['grpc-message']));
}

/** setTimeout's limit; a longer deadline would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One HTTP/2 connection and what happened to it. */
interface Connection {
  readonly session: ClientHttp2Session;
  /** The socket connected (the HTTP/2 preface went out). */
  connected: boolean;
  /** It received a GOAWAY, failed or closed: no new calls go on it. */
  gone: boolean;
  /** Why it failed, for the message of the calls it takes down. */
  failure: Error | undefined;
}

/**
 * One HTTP/2 session to the socket, dialled on the first call and again on the first call after
 * it went away (error, close, GOAWAY). The session is unref'd: an idle one never keeps the
 * process alive, while a call in flight does through its deadline timer.
 */
export class UnaryChannel {
  private readonly socketPath: string;
  private readonly now: () => number;
  private current: Connection | undefined;
  private lastDialFailure: { readonly atMs: number; readonly details: string } | undefined;
  private closed = false;

  constructor(options: UnaryChannelOptions) {
    this.socketPath = options.socketPath;
    this.now = options.now ?? Date.now;
  }

  /**
   * Sends one request message and resolves with the one response message. Rejects with a
   * `GrpcCallError` only: the server's status, UNAVAILABLE when the socket cannot be reached or the
   * connection breaks, DEADLINE_EXCEEDED, CANCELLED (the signal, or after `close()`),
   * RESOURCE_EXHAUSTED past `MAX_MESSAGE_BYTES`, INTERNAL for a response that breaks the protocol.
   */
  call(request: UnaryRequest): Promise<Buffer> {
    if (request.signal?.aborted === true) return Promise.reject(new GrpcCallError(GrpcCode.CANCELLED, 'cancelled before it was sent'));
    if (request.message.length > MAX_MESSAGE_BYTES) {
      return Promise.reject(new GrpcCallError(GrpcCode.RESOURCE_EXHAUSTED, `request of ${request.message.length} bytes exceeds the limit of ${MAX_MESSAGE_BYTES}`));
    }
    let connection: Connection;
    try {
      connection = this.connection();
    } catch (e: unknown) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return new Promise<Buffer>((resolve, reject) => {
      new UnaryExchange(connection, request, { resolve, reject }).start();
    });
  }

  /** Closes the session once its calls in flight are done; later calls fail with CANCELLED. */
  close(): void {
    this.closed = true;
    this.current?.session.close();
    this.current = undefined;
  }

  private connection(): Connection {
    if (this.closed) throw new GrpcCallError(GrpcCode.CANCELLED, 'the CRI client is closed');
    if (this.current !== undefined) return this.current;
    const failure = this.lastDialFailure;
    if (failure !== undefined) {
      const sinceMs = this.now() - failure.atMs;
      // The same message as the failed dial's, so the log de-duplication sees one failure.
      if (sinceMs >= 0 && sinceMs < REDIAL_HOLD_OFF_MS) throw new GrpcCallError(GrpcCode.UNAVAILABLE, failure.details);
    }
    this.current = this.dial();
    return this.current;
  }

  private dial(): Connection {
    const session = http2.connect('http://localhost', {
      createConnection: () => net.connect(this.socketPath),
      // Outgoing data still queued counts against this limit (in MB), and new streams are refused
      // while it is exceeded: the default 10 would stall calls behind one 16 MiB request.
      maxSessionMemory: 64,
      settings: { enablePush: false, initialWindowSize: 1024 * 1024 },
    });
    const connection: Connection = { session, connected: false, gone: false, failure: undefined };
    const forget = (): void => {
      connection.gone = true;
      if (this.current === connection) this.current = undefined;
    };
    session.once('connect', () => {
      connection.connected = true;
      this.lastDialFailure = undefined;
      // The connection's own window too: at its default 64 KiB it would cap all streams together.
      session.setLocalWindowSize(8 * 1024 * 1024);
    });
    session.on('error', (error: Error) => {
      connection.failure = error;
      if (!connection.connected) this.lastDialFailure = { atMs: this.now(), details: unreachable(error) };
      forget();
    });
    session.once('close', forget);
    // A GOAWAY lets the streams it covers finish on this session; new calls dial a new one.
    session.once('goaway', forget);
    session.unref();
    return connection;
  }
}

function unreachable(error: Error): string {
  return `cannot reach the runtime: ${error.message}`;
}

interface Settle {
  readonly resolve: (message: Buffer) => void;
  readonly reject: (error: GrpcCallError) => void;
}

/** One call's stream, from request headers to the status. */
class UnaryExchange {
  private stream: ClientHttp2Stream | undefined;
  private timer: NodeJS.Timeout | undefined;
  private settled = false;
  private headers: (IncomingHttpHeaders & IncomingHttpStatusHeader) | undefined;
  private trailers: IncomingHttpHeaders | undefined;
  private readonly chunks: Buffer[] = [];
  private received = 0;
  /** Bytes of the whole length-prefixed message, once its prefix has arrived. */
  private expected: number | undefined;
  private readonly onAbort = (): void => {
    this.fail(GrpcCode.CANCELLED, 'cancelled by the caller');
  };

  constructor(
    private readonly connection: Connection,
    private readonly request: UnaryRequest,
    private readonly settle: Settle,
  ) {}

  start(): void {
    const { session } = this.connection;
    let stream: ClientHttp2Stream;
    try {
      stream = session.request({
        ':method': 'POST',
        ':path': this.request.path,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': grpcTimeout(this.request.timeoutMs),
        'user-agent': 'nodelet-cri/1',
      });
    } catch (e: unknown) {
      // The session was already closing or destroyed (e.g. a GOAWAY not yet seen by the channel).
      this.fail(GrpcCode.UNAVAILABLE, e instanceof Error ? e.message : String(e));
      return;
    }
    this.stream = stream;
    stream.on('response', (headers) => {
      this.onResponse(headers);
    });
    stream.on('data', (chunk: Buffer) => {
      this.onData(chunk);
    });
    stream.on('trailers', (trailers: IncomingHttpHeaders) => {
      this.trailers = trailers;
    });
    // An error is always followed by 'close', which decides; the listener keeps it from being thrown.
    stream.on('error', () => undefined);
    stream.on('close', () => {
      this.onClose(stream.rstCode);
    });
    this.timer = setTimeout(() => {
      this.fail(GrpcCode.DEADLINE_EXCEEDED, `deadline of ${this.request.timeoutMs} ms exceeded`);
    }, Math.min(MAX_TIMER_MS, Math.max(0, this.request.timeoutMs)));
    this.request.signal?.addEventListener('abort', this.onAbort, { once: true });
    stream.end(frame(this.request.message));
  }

  private onResponse(headers: IncomingHttpHeaders & IncomingHttpStatusHeader): void {
    this.headers = headers;
    const httpStatus = headers[':status'] ?? 0;
    if (httpStatus !== 200) {
      this.fail(HTTP_STATUS_CODES[httpStatus] ?? GrpcCode.UNKNOWN, `HTTP status ${httpStatus} from the runtime`);
      return;
    }
    if (!(headers['content-type'] ?? '').startsWith('application/grpc')) {
      this.fail(GrpcCode.INTERNAL, `not a gRPC response: content-type "${headers['content-type'] ?? ''}"`);
    }
  }

  private onData(chunk: Buffer): void {
    if (this.settled) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.expected === undefined && this.received >= 5) {
      const head = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks);
      const length = head.readUInt32BE(1);
      if (head[0] !== 0) {
        this.fail(GrpcCode.INTERNAL, 'compressed response, but no compression was negotiated');
        return;
      }
      if (length > MAX_MESSAGE_BYTES) {
        this.fail(GrpcCode.RESOURCE_EXHAUSTED, `response of ${length} bytes exceeds the limit of ${MAX_MESSAGE_BYTES}`);
        return;
      }
      this.expected = 5 + length;
    }
    if (this.expected !== undefined && this.received > this.expected) {
      this.fail(GrpcCode.INTERNAL, 'more than one message in a unary response');
    }
  }

  private onClose(rstCode: number | undefined): void {
    if (this.settled) return;
    // The status is in the trailers, or in the headers of a trailers-only answer.
    const status = statusOf(this.trailers ?? this.headers);
    if (status instanceof GrpcCallError) this.finish(status);
    else if (status !== undefined) this.succeed();
    // No status: the stream was reset, or lost with its connection. A connection's end shows up
    // after its streams' (a failed dial's error, a server's GOAWAY after it reset its streams with
    // NO_ERROR), so decide once the events already read are out.
    else setImmediate(() => { this.onLost(rstCode ?? NGHTTP2_NO_ERROR); });
  }

  private onLost(rstCode: number): void {
    const { gone, session, connected, failure } = this.connection;
    if (gone || session.destroyed) {
      // A call lost with its connection (runtime down, stopped or restarted) is UNAVAILABLE; a
      // failed dial says so in the words of the hold-off's failures, for the log de-duplication.
      if (failure === undefined) this.fail(GrpcCode.UNAVAILABLE, 'the connection to the runtime closed');
      else this.fail(GrpcCode.UNAVAILABLE, connected ? `lost the connection to the runtime: ${failure.message}` : unreachable(failure));
    } else if (rstCode !== NGHTTP2_NO_ERROR) {
      this.fail(statusOfReset(rstCode), `stream reset by the runtime (HTTP/2 error code ${rstCode})`);
    } else {
      this.fail(GrpcCode.INTERNAL, 'the runtime ended the call without a grpc-status');
    }
  }

  /** The status was OK: exactly one complete message must have arrived. */
  private succeed(): void {
    if (this.expected === undefined || this.received !== this.expected) {
      this.fail(GrpcCode.INTERNAL, this.received === 0 ? 'no response message' : 'truncated response message');
      return;
    }
    const whole = this.chunks.length === 1 ? this.chunks[0] ?? Buffer.alloc(0) : Buffer.concat(this.chunks, this.received);
    this.done();
    this.settle.resolve(whole.subarray(5));
  }

  private fail(code: number, details: string): void {
    this.finish(new GrpcCallError(code, details));
  }

  private finish(error: GrpcCallError): void {
    if (this.settled) return;
    this.done();
    // A stream we give up on is reset, so the runtime stops working on it and nothing more is buffered.
    if (this.stream !== undefined && !this.stream.closed) this.stream.close(NGHTTP2_CANCEL);
    this.settle.reject(error);
  }

  private done(): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.request.signal?.removeEventListener('abort', this.onAbort);
    this.chunks.length = 0;
  }
}

/** The one length-prefixed message of a request: flag 0 (uncompressed), 4-byte length, payload. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}
