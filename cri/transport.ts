/**
 * A typed unary call to the runtime over one HTTP/2 connection to its unix socket. The gRPC
 * framing is our own (`grpc-unary.ts`, on `node:http2`), which costs about half the CPU per call of
 * grpc-js's client; messages are (de)serialized with `api.proto` (`proto.ts`). Every call gets a
 * deadline; every failure leaves as a typed `CriError` (class chosen by status code) and is logged
 * through the `ErrorLogReducer`.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriCancelledError, CriError, criErrorFromStatus, isCriCancelled, isCriError, isCriNotFound } from './errors.js';
import { ErrorLogReducer } from './error-log.js';
import type { CriLogger } from './error-log.js';
import { UnaryChannel, unixSocketPath } from './grpc-unary.js';
import { operationName, type CriMetrics } from './operation-metrics.js';
import { criMethod } from './proto.js';
import type { CriServiceName } from './proto.js';

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

export { unixSocketPath } from './grpc-unary.js';

/** A gRPC status error: ours (`GrpcCallError`) or one shaped like grpc-js's `ServiceError`. */
interface StatusError extends Error {
  readonly code: GrpcStatus;
  readonly details?: unknown;
}

function isStatusError(e: unknown): e is StatusError {
  return e instanceof Error && typeof (e as Partial<StatusError>).code === 'number';
}

/** Wraps whatever a call failed with into the matching `CriError`. */
export function toCriError(method: string, e: unknown): CriError {
  if (isCriError(e)) return e;
  if (isStatusError(e)) {
    const details = typeof e.details === 'string' && e.details !== '' ? e.details : e.message;
    return criErrorFromStatus({ method, code: e.code, message: details, cause: e });
  }
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
  private readonly channel: UnaryChannel;
  private readonly errors: ErrorLogReducer;
  private readonly logger: CriLogger | undefined;
  private readonly metrics: CriMetrics | undefined;
  private readonly now: () => number;

  constructor(options: CriTransportOptions) {
    this.channel = new UnaryChannel({ socketPath: unixSocketPath(options.endpoint), now: options.now });
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

  /** Closes the connection once its calls in flight are done; calls made afterwards fail. */
  close(): void {
    this.channel.close();
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

  private async send(spec: UnaryCall): Promise<object> {
    const method = criMethod(spec.service, spec.method);
    const { signal } = spec;
    const abortedBefore = ifAborted(signal);
    if (abortedBefore !== undefined) throw cancelled(spec.method, abortedBefore);
    let message: Buffer;
    try {
      message = method.requestSerialize(spec.request);
    } catch (e: unknown) {
      throw new CriError({ method: spec.method, code: GrpcStatus.INTERNAL, message: `request serialization failed: ${String(e)}`, cause: e });
    }
    let response: Buffer;
    try {
      response = await this.channel.call({ path: method.path, message, timeoutMs: spec.timeoutMs, signal });
    } catch (e: unknown) {
      // The signal's reason says why the caller gave up; the stream reset is just how.
      const aborted = ifAborted(signal);
      throw aborted === undefined ? e : cancelled(spec.method, aborted, e);
    }
    try {
      return method.responseDeserialize(response);
    } catch (e: unknown) {
      throw new CriError({ method: spec.method, code: GrpcStatus.INTERNAL, message: `response parsing failed: ${String(e)}`, cause: e });
    }
  }
}

/** The signal if it has been aborted. (A call, not an inline test: TypeScript would carry the first test's answer past the await.) */
function ifAborted(signal: AbortSignal | undefined): AbortSignal | undefined {
  return signal?.aborted === true ? signal : undefined;
}

function cancelled(method: string, signal: AbortSignal, cause?: unknown): CriCancelledError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted';
  return new CriCancelledError({ method, code: GrpcStatus.CANCELLED, message: `cancelled by the caller: ${why}`, cause: cause ?? reason });
}
