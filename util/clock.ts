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

/** The real clock. Timers are unref'd: a controller's heartbeat alone never holds the process open. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
