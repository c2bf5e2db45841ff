/**
 * A token bucket with waiting, as client-go's `flowcontrol.NewTokenBucketRateLimiter` (which is
 * golang.org/x/time/rate's `Limiter` underneath): the bucket starts full with `burst` tokens and
 * refills at `qps` tokens per second, never past `burst`. A caller takes one token per call; when
 * none is left it reserves the next one (the bucket goes negative) and waits until the reservation
 * is due, so waiters are served in arrival order at exactly `qps` per second. A wait given up
 * through its AbortSignal hands its reservation back (rate's `Reservation.Cancel`), less the
 * tokens reserved after it, so the callers behind it are not held for a request never sent.
 *
 * Time comes from an injected {@link Clock}: unit tests drive the refill with a fake clock.
 */
import type { Clock, TimerHandle } from './clock.js';

/** A bucket that could never hand out a token (a rate or size that is not positive). */
export class InvalidTokenBucketError extends RangeError {
  override readonly name = 'InvalidTokenBucketError';
}

/** A reservation: the token it took, and when it may be used. */
interface Reservation {
  readonly dueAt: number;
}

/** A rate limit of `qps` calls per second with bursts of up to `burst`. */
export class TokenBucket {
  private tokens: number;
  /** When `tokens` was last brought up to date. */
  private last: number;
  /** When the latest reservation is due (rate's `lastEvent`): what a cancellation must not give back. */
  private lastEvent: number;

  /**
   * @param qps tokens added per second, above 0
   * @param burst the bucket's size, at least 1
   * @throws InvalidTokenBucketError otherwise: such a bucket would make every caller wait forever
   */
  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: Clock,
  ) {
    if (!(qps > 0) || !Number.isFinite(qps)) throw new InvalidTokenBucketError(`a token bucket needs a rate above 0, got ${qps}`);
    if (!Number.isInteger(burst) || burst < 1) throw new InvalidTokenBucketError(`a token bucket needs a burst of at least 1, got ${burst}`);
    this.tokens = burst;
    this.last = clock.now();
    this.lastEvent = this.last;
  }

  /** Takes a token if one is there now; never waits (client-go's `TryAccept`). */
  tryAccept(): boolean {
    const now = this.clock.now();
    const tokens = this.advance(now);
    if (tokens < 1) return false;
    this.last = now;
    this.tokens = tokens - 1;
    return true;
  }

  /**
   * Takes a token, waiting for it when the bucket is empty (client-go's `Wait`). Resolves with the
   * milliseconds waited; rejects with the signal's reason when it aborts first (at once when it
   * already has), and the token goes back to the bucket.
   */
  wait(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted === true) return Promise.reject(abortReason(signal));
    const now = this.clock.now();
    const reservation = this.reserve(now);
    const delayMs = reservation.dueAt - now;
    if (delayMs <= 0) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      const timer: TimerHandle = this.clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(delayMs);
      }, delayMs);
      const onAbort = (): void => {
        this.clock.clearTimeout(timer);
        this.cancel(reservation);
        reject(abortReason(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Tokens at `now`: what was there plus the refill since, capped at the burst (rate's `advance`). */
  private advance(now: number): number {
    const elapsedMs = Math.max(0, now - this.last);
    return Math.min(this.burst, this.tokens + (elapsedMs * this.qps) / 1000);
  }

  private reserve(now: number): Reservation {
    const tokens = this.advance(now) - 1;
    const waitMs = tokens < 0 ? (-tokens * 1000) / this.qps : 0;
    this.last = now;
    this.tokens = tokens;
    this.lastEvent = now + waitMs;
    return { dueAt: this.lastEvent };
  }

  /**
   * Gives a reservation's token back (rate's `CancelAt`), less what was reserved after it: those
   * later reservations keep their place, and a token they already counted on is not handed out twice.
   */
  private cancel(reservation: Reservation): void {
    const now = this.clock.now();
    if (reservation.dueAt < now) return;
    const restore = 1 - ((this.lastEvent - reservation.dueAt) * this.qps) / 1000;
    if (restore <= 0) return;
    this.tokens = Math.min(this.burst, this.advance(now) + restore);
    this.last = now;
    if (reservation.dueAt === this.lastEvent) {
      const previous = reservation.dueAt - 1000 / this.qps;
      if (previous >= now) this.lastEvent = previous;
    }
  }
}

/**
 * What an aborted wait rejects with: the signal's reason when it is an error (as `fetch` and
 * timers/promises reject), else an `AbortError`.
 */
function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException('The operation was aborted', 'AbortError');
}
