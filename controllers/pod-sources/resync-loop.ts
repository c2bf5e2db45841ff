/**
 * The periodic full resync: every period (jittered by up to 10%, so agents started together do not
 * resync together) every pod the source knows is enqueued again, the safety net behind events.
 * The period can change while running (the NodeAgent's `spec.resyncPeriodSeconds`).
 */
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop } from '../../util/periodic-loop.js';

/** Options of {@link startResyncLoop}. */
export interface ResyncLoopOptions {
  /** Enqueues every known pod; must not throw. */
  readonly resyncAll: () => void;
  readonly periodMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A number in [0, 1) for the jitter; default Math.random. */
  readonly random?: () => number;
}

/** A running resync loop. */
export interface ResyncLoop {
  /** Takes effect at once: the next resync is one new period (plus jitter) from now. */
  setPeriodMs(periodMs: number): void;
  /** Stops at once: a resync is synchronous, so none is ever left in flight. */
  stop(): void;
}

/** Starts the loop; the first resync is one period from now. */
export function startResyncLoop(options: ResyncLoopOptions): ResyncLoop {
  const loop = createPeriodicLoop({
    name: 'resync',
    periodMs: options.periodMs,
    firstRun: 'after-period',
    jitter: 0.1,
    random: options.random,
    clock: options.clock,
    logger: options.logger,
    run: options.resyncAll,
  });
  loop.start();
  return {
    setPeriodMs: (periodMs) => {
      loop.setPeriodMs(periodMs);
    },
    stop: () => {
      void loop.stop();
    },
  };
}
