/**
 * Typed errors of the CRI client. Callers branch on the class (or the `isCri*` predicates), never
 * on messages: the class is chosen from the gRPC status code alone.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';

/** What every CRI error carries. */
export interface CriErrorOptions {
  /** The CRI method that failed, e.g. `StopContainer`. */
  readonly method: string;
  /** The gRPC status code (`@grpc/grpc-js` `status`); `UNKNOWN` when the failure was not a gRPC status. */
  readonly code: GrpcStatus;
  /** Human-readable detail (the gRPC status details, or why a response was rejected). */
  readonly message: string;
  readonly cause?: unknown;
}

/** A CRI call failed. Base class of every error the client throws. */
export class CriError extends Error {
  override name = 'CriError';
  readonly method: string;
  readonly code: GrpcStatus;
  /** The runtime's own words (the gRPC status details), without the method. */
  readonly details: string;

  constructor(options: CriErrorOptions) {
    super(`${options.method}: ${options.message}`, { cause: options.cause });
    this.method = options.method;
    this.code = options.code;
    this.details = options.message;
  }

  /** The symbolic name of `code`, e.g. `NOT_FOUND`, for logs. */
  get codeName(): string {
    return GrpcStatus[this.code];
  }

  /**
   * The error as the kubelet's gRPC client prints it (`rpc error: code = Unknown desc = …`), for
   * answers that quote the runtime's failure in the kubelet's words.
   */
  get goStatusText(): string {
    const camel = this.codeName.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _sep: string, letter: string) => letter.toUpperCase());
    return `rpc error: code = ${camel === 'Ok' ? 'OK' : camel} desc = ${this.details}`;
  }
}

/** The runtime does not know the sandbox, container or image (gRPC `NOT_FOUND`). */
export class CriNotFoundError extends CriError {
  // A literal name makes each subclass structurally distinct from CriError, so that after
  // `isCriError(e) && !isCriNotFound(e)` TypeScript still sees a CriError rather than `never`.
  override readonly name = 'CriNotFoundError';
}

/** The runtime could not be reached or refused the connection (gRPC `UNAVAILABLE`). Retry later. */
export class CriUnavailableError extends CriError {
  override readonly name = 'CriUnavailableError';
}

/** The call's deadline passed before the runtime answered (gRPC `DEADLINE_EXCEEDED`). */
export class CriDeadlineError extends CriError {
  override readonly name = 'CriDeadlineError';
}

/**
 * The caller cancelled the call through its `AbortSignal` (gRPC `CANCELLED`): nothing is wrong with
 * the runtime; whatever the call was doing may or may not have happened, and the next reconcile
 * looks again.
 */
export class CriCancelledError extends CriError {
  override readonly name = 'CriCancelledError';
}

/** The runtime does not implement the method (gRPC `UNIMPLEMENTED`), e.g. containerd 1.6's GetContainerEvents. */
export class CriUnimplementedError extends CriError {
  override readonly name = 'CriUnimplementedError';
}

/** The runtime answered, but the answer breaks the CRI contract (e.g. an empty ID). */
export class CriInvalidResponseError extends CriError {
  override readonly name = 'CriInvalidResponseError';
  constructor(options: Omit<CriErrorOptions, 'code'>) {
    super({ ...options, code: GrpcStatus.INTERNAL });
  }
}

export function isCriError(e: unknown): e is CriError {
  return e instanceof CriError;
}

export function isCriNotFound(e: unknown): e is CriNotFoundError {
  return e instanceof CriNotFoundError;
}

export function isCriUnavailable(e: unknown): e is CriUnavailableError {
  return e instanceof CriUnavailableError;
}

export function isCriDeadline(e: unknown): e is CriDeadlineError {
  return e instanceof CriDeadlineError;
}

export function isCriCancelled(e: unknown): e is CriCancelledError {
  return e instanceof CriCancelledError;
}

export function isCriUnimplemented(e: unknown): e is CriUnimplementedError {
  return e instanceof CriUnimplementedError;
}

export function isCriInvalidResponse(e: unknown): e is CriInvalidResponseError {
  return e instanceof CriInvalidResponseError;
}

/** Builds the error class that matches a gRPC status code. */
export function criErrorFromStatus(options: CriErrorOptions): CriError {
  if (options.code === GrpcStatus.NOT_FOUND) return new CriNotFoundError(options);
  if (options.code === GrpcStatus.UNAVAILABLE) return new CriUnavailableError(options);
  if (options.code === GrpcStatus.DEADLINE_EXCEEDED) return new CriDeadlineError(options);
  if (options.code === GrpcStatus.CANCELLED) return new CriCancelledError(options);
  if (options.code === GrpcStatus.UNIMPLEMENTED) return new CriUnimplementedError(options);
  return new CriError(options);
}
