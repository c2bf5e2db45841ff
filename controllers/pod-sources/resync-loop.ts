/**
 * The periodic full resync: every period (jittered by up to 10%, so agents started together do not
 * resync together) every pod the source knows is enqueued again, the safety net behind events.
 * The period can change while running (the NodeAgent's `spec.resyncPeriodSeconds`).
 */
import type { Clock, TimerHandle } from '../../util/clock.js';

/** Options of {@link startResyncLoop}. */
export interface ResyncLoopOptions {
  /** Enqueues every known pod; must not throw. */
  readonly resyncAll: () => void;
  readonly periodMs: number;
  readonly clock: Clock;
  /** A number in [0, 1) for the jitter; default Math.random. */
  readonly random?: () => number;
}

/** A running resync loop. */
export interface ResyncLoop {
  /** Takes effect at once: the next resync is one new period (plus jitter) from now. */
  setPeriodMs(periodMs: number): void;
  stop(): void;
}

/** Starts the loop; the first resync is one period from now. */
export function startResyncLoop(options: ResyncLoopOptions): ResyncLoop {
  const { clock } = options;
  const random = options.random ?? Math.random;
  let periodMs = options.periodMs;
  let timer: TimerHandle | undefined;
  let stopped = false;

  function schedule(delayMs: number): void {
    clock.clearTimeout(timer);
    timer = clock.setTimeout(tick, delayMs);
  }

  function tick(): void {
    if (stopped) return;
    options.resyncAll();
    schedule(periodMs * (1 + random() * 0.1));
  }

  schedule(periodMs);
  return {
    setPeriodMs(next: number): void {
      if (next === periodMs || stopped) return;
      periodMs = next;
      schedule(periodMs);
    },
    stop(): void {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
