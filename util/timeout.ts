/**
 * The one way to bound a wait: race work against a timer on the injected clock. The timer is
 * cleared as soon as the race is decided, so a bounded call leaves no timer behind, and the work
 * is never cancelled (a promise cannot be): it runs on, its outcome ignored.
 */
import type { Clock, TimerHandle } from './clock.js';

/** Work that did not settle within its time limit. */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  constructor(
    /** What was waited for, e.g. `Redis`. */
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what} did not answer within ${timeoutMs} ms`);
  }
}

/** True when `err` is a {@link TimeoutError}. */
export function isTimeoutError(err: unknown): err is TimeoutError {
  return err instanceof TimeoutError;
}

/** How long to wait, on which clock. */
export interface TimeoutOptions {
  readonly clock: Clock;
  /** Negative limits count as 0: the work must already have settled. */
  readonly timeoutMs: number;
}

const TIMED_OUT = Symbol('timed out');

/** Settles like `work`, or resolves {@link TIMED_OUT} once `timeoutMs` has passed first. */
async function race<T>(work: Promise<T>, options: TimeoutOptions): Promise<T | typeof TIMED_OUT> {
  let timer: TimerHandle | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = options.clock.setTimeout(() => {
      resolve(TIMED_OUT);
    }, Math.max(0, options.timeoutMs));
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    options.clock.clearTimeout(timer);
  }
}

/**
 * Resolves or rejects like `work`, or rejects with a {@link TimeoutError} naming `what` when
 * `timeoutMs` passes first.
 */
export async function withTimeout<T>(work: Promise<T>, options: TimeoutOptions & { readonly what: string }): Promise<T> {
  const outcome = await race(work, options);
  if (outcome === TIMED_OUT) throw new TimeoutError(options.what, options.timeoutMs);
  return outcome;
}

/** Resolves true when `work` settles (resolves or rejects) within `timeoutMs`, false otherwise. */
export async function settlesWithin(work: Promise<unknown>, options: TimeoutOptions): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  return (await race(settled, options)) !== TIMED_OUT;
}
