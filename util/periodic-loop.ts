/**
 * A task run on a period, retried sooner with capped backoff when it fails, and runnable on demand.
 * The node controller's status and lease heartbeats are two of these. A loop never throws: a failed
 * run is logged and retried, so a dead API server cannot crash the agent.
 */
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import type { Clock, TimerHandle } from './clock.js';

/** What a loop runs and how often. */
export interface PeriodicLoopOptions {
  /** Names the loop in logs. */
  readonly name: string;
  /** Delay between the end of a successful run and the start of the next. */
  readonly periodMs: number;
  /** Delay after failed runs; `maxMs` above `periodMs` would make failures slower than success. */
  readonly backoff: BackoffPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The work; a rejection counts as a failed run. */
  readonly run: () => Promise<void>;
}

/** A running heartbeat. */
export interface PeriodicLoop {
  /** Runs the task now and then on schedule. Starting a started loop does nothing. */
  start(): void;
  /** Cancels the schedule and waits for a run in flight. The loop never runs again. */
  stop(): Promise<void>;
  /**
   * Runs the task as soon as possible: now, or right after the run in flight (calls made while one
   * is queued share it). Resolves true when that run succeeded. Restarts the period from its end.
   */
  runNow(): Promise<boolean>;
  /** Clock time of the last successful run, undefined before the first. */
  lastSuccessAt(): number | undefined;
  /** Failed runs since the last success. */
  consecutiveFailures(): number;
}

/** Creates a stopped loop; call `start()`. */
export function createPeriodicLoop(options: PeriodicLoopOptions): PeriodicLoop {
  const { clock, logger } = options;
  let started = false;
  let stopped = false;
  let timer: TimerHandle | undefined;
  let inflight: Promise<boolean> | undefined;
  let queued: Promise<boolean> | undefined;
  let lastSuccess: number | undefined;
  let failures = 0;

  function cancelTimer(): void {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  }

  function schedule(delayMs: number): void {
    cancelTimer();
    if (stopped) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      void execute();
    }, delayMs);
  }

  async function attempt(): Promise<boolean> {
    try {
      await options.run();
      if (failures > 0) logger.info({ loop: options.name, failures }, 'loop recovered');
      failures = 0;
      lastSuccess = clock.now();
      return true;
    } catch (err: unknown) {
      failures += 1;
      // The first failure is news; repeats of an outage are logged less loudly.
      const level = failures === 1 ? 'warn' : 'debug';
      logger[level]({ loop: options.name, failures, err }, 'loop run failed; retrying with backoff');
      return false;
    }
  }

  function execute(): Promise<boolean> {
    cancelTimer();
    const current = attempt().then((ok) => {
      inflight = undefined;
      schedule(ok ? options.periodMs : backoffDelay(options.backoff, failures));
      return ok;
    });
    inflight = current;
    return current;
  }

  return {
    start(): void {
      if (started || stopped) return;
      started = true;
      void execute();
    },
    async stop(): Promise<void> {
      stopped = true;
      cancelTimer();
      await queued;
      await inflight;
      cancelTimer();
    },
    runNow(): Promise<boolean> {
      if (stopped) return Promise.resolve(false);
      if (queued) return queued;
      if (!inflight) return execute();
      const next = inflight.then(() => {
        queued = undefined;
        return stopped ? false : execute();
      });
      queued = next;
      return next;
    },
    lastSuccessAt: () => lastSuccess,
    consecutiveFailures: () => failures,
  };
}
