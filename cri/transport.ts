/**
 * One gRPC channel to the runtime's unix socket and a typed unary call over it. Every call gets a
 * deadline; every failure leaves as a typed `CriError` (class chosen by status code) and is logged
 * through the `ErrorLogReducer`.
 */
import { Client, Metadata, credentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ChannelOptions, ServiceError } from '@grpc/grpc-js';
import { CriCancelledError, CriError, criErrorFromStatus, isCriCancelled, isCriError, isCriNotFound } from './errors.js';
import { ErrorLogReducer } from './error-log.js';
import type { CriLogger } from './error-log.js';
import { operationName, type CriMetrics } from './operation-metrics.js';
import { criMethod } from './proto.js';
import type { CriServiceName } from './proto.js';

const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Channel settings. Reconnect backoff is capped low (grpc-js defaults to two minutes) so that
 * nodelet notices a restarted containerd within seconds; message limits match the kubelet's.
 */
const CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 3000,
};

/** An identical failure is warned about again after this long. */
const REPEAT_WARNING_AFTER_MS = 60_000;

export interface CriTransportOptions {
  /** `unix:///path/to/socket` (a bare absolute path is accepted too). */
  readonly endpoint: string;
  readonly logger?: CriLogger;
  /** Milliseconds since the epoch, for log de-duplication and call durations; `Date.now` by default. */
  readonly now?: () => number;
  /** Receives every call's operation, duration and failure. */
  readonly metrics?: CriMetrics;
}

/** One unary call. */
export interface UnaryCall {
  readonly service: CriServiceName;
  readonly method: string;
  readonly request: object;
  readonly timeoutMs: number;
  /** Cancels the call when aborted (see `CallOptions.signal`). */
  readonly signal?: AbortSignal;
  /** What the call is about (container ID, image name…): repeated failures are de-duplicated per subject. */
  readonly subject?: string;
}

/** Turns the configured endpoint into a grpc-js target; only unix sockets are supported. */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix:///')) return endpoint;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  throw new TypeError(`unsupported CRI endpoint "${endpoint}": expected unix:///absolute/path`);
}

function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number';
}

/** Wraps whatever a call failed with into the matching `CriError`. */
export function toCriError(method: string, e: unknown): CriError {
  if (isCriError(e)) return e;
  if (isServiceError(e)) return criErrorFromStatus({ method, code: e.code, message: e.details || e.message, cause: e });
  const message = e instanceof Error ? e.message : String(e);
  return new CriError({ method, code: GrpcStatus.UNKNOWN, message, cause: e });
}

/** Rejects an empty identifier before it reaches the runtime (which may treat it as "any"). */
export function requireArgument(method: string, what: string, value: string): void {
  if (value === '') throw new CriError({ method, code: GrpcStatus.INVALID_ARGUMENT, message: `empty ${what}` });
}

/** Resolves when `call` succeeds or fails with NotFound: the object is gone either way. */
export async function ignoreNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (e: unknown) {
    if (!isCriNotFound(e)) throw e;
  }
}

export class CriTransport {
  private readonly client: Client;
  private readonly errors: ErrorLogReducer;
  private readonly logger: CriLogger | undefined;
  private readonly metrics: CriMetrics | undefined;
  private readonly now: () => number;

  constructor(options: CriTransportOptions) {
    this.client = new Client(grpcTarget(options.endpoint), credentials.createInsecure(), CHANNEL_OPTIONS);
    this.errors = new ErrorLogReducer({
      logger: options.logger,
      now: options.now ?? Date.now,
      repeatAfterMs: REPEAT_WARNING_AFTER_MS,
    });
    this.logger = options.logger;
    this.metrics = options.metrics;
    this.now = options.now ?? Date.now;
  }

  /**
   * Sends one request and converts the decoded response with `convert`, which validates its
   * content. Failures of either step are logged and thrown as `CriError`s.
   */
  async call<R>(spec: UnaryCall, convert: (wire: object) => R): Promise<R> {
    const key = `${spec.method}/${spec.subject ?? ''}`;
    const startedMs = this.now();
    try {
      const result = convert(await this.send(spec));
      this.errors.clear(key);
      this.record(spec.method, startedMs, false);
      return result;
    } catch (e: unknown) {
      const error = toCriError(spec.method, e);
      this.record(spec.method, startedMs, true);
      this.log(key, error);
      throw error;
    }
  }

  private record(method: string, startedMs: number, failed: boolean): void {
    this.metrics?.operation({ operation: operationName(method), seconds: Math.max(0, this.now() - startedMs) / 1000, failed });
  }

  /** Closes the channel; calls made afterwards fail. */
  close(): void {
    this.client.close();
  }

  private log(key: string, error: CriError): void {
    // NotFound is an answer ("no such container"), and a cancellation is the caller's choice:
    // neither is a fault of the runtime, so never a warning.
    if (isCriNotFound(error) || isCriCancelled(error)) {
      this.logger?.debug({ method: error.method, key, err: error }, 'CRI object not found');
      return;
    }
    this.errors.report(key, error);
  }

  private send(spec: UnaryCall): Promise<object> {
    const method = criMethod(spec.service, spec.method);
    const deadline = Date.now() + spec.timeoutMs;
    const { signal } = spec;
    if (signal?.aborted === true) return Promise.reject(cancelled(spec.method, signal));
    return new Promise<object>((resolve, reject) => {
      const call = this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        spec.request,
        new Metadata(),
        { deadline },
        (error, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) reject(signal?.aborted === true ? cancelled(spec.method, signal, error) : error);
          else if (response === undefined) reject(new Error('empty response'));
          else resolve(response);
        },
      );
      function onAbort(): void {
        call.cancel();
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function cancelled(method: string, signal: AbortSignal, cause?: unknown): CriCancelledError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted';
  return new CriCancelledError({ method, code: GrpcStatus.CANCELLED, message: `cancelled by the caller: ${why}`, cause: cause ?? reason });
}
