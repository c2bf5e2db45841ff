/**
 * Time as the controllers see it. Everything that waits or stamps a time takes a `Clock`, so unit
 * tests drive ticks with a fake clock instead of sleeping.
 */

/** Opaque handle of a scheduled callback; only the clock that made it can cancel it. */
export type TimerHandle = object | number;

/** The wall clock and one-shot timers. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds. Timers must not keep the process alive on their own. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; cancelling a fired timer, or anything that is not a live handle, is a no-op. */
  clearTimeout(handle: unknown): void;
}

/**
 * The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days). Node fires a longer one
 * after 1 ms instead (TimeoutOverflowWarning), so a pod spec's `periodSeconds: 2147483647` made its
 * probe run every millisecond; a longer wait is clamped to this, which is as good as never for a
 * pod (found by the hostile-specs campaign, test/faults-scale).
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `ms` within Node's timer range, for timeouts handed to Node itself (socket and request
 * timeouts): past 2^31-1 ms Node prints a TimeoutOverflowWarning. A spec's `timeoutSeconds` or
 * grace period of 2^31-1 s then waits 24.8 days instead of 68 years: no difference that matters.
 */
export function timerMs(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}

/** The real clock. Timers are unref'd: a controller's heartbeat alone never holds the process open. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, timerMs(ms));
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
