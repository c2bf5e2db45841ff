/**
 * The one periodic loop: a task run on a period, retried sooner with capped backoff when it fails,
 * and runnable on demand. PLEG's relist, the full resync, the queue-state watch, the informer
 * watchdog, the status manager's retries, the node status and lease heartbeats, the NodeAgent
 * status, the probe workers and the grace-shrink watch of a stopping container all run on it.
 *
 * Guarantees:
 * - runs never overlap: the next one is scheduled when the current one has ended;
 * - a loop never throws: a failed run (rejection or synchronous throw) is logged and retried after
 *   the backoff, so a dead dependency cannot crash the agent;
 * - `stop()` cancels the schedule and waits for the run in flight; nothing runs afterwards.
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
  /**
   * Delay after failed runs; `maxMs` above `periodMs` would make failures slower than success.
   * Default: the period (a failure is simply retried at the next tick).
   */
  readonly backoff?: BackoffPolicy;
  /**
   * When the first run happens. `now` (the default): within `start()`. `after-period`: one period
   * after `start()`, not jittered (a period change before then moves it like any scheduled tick).
   */
  readonly firstRun?: 'now' | 'after-period';
  /**
   * Spread of the delay after a successful run: `periodMs * (1 + random() * jitter)`, so agents
   * started together drift apart. Default 0 (exact period).
   */
  readonly jitter?: number;
  /** A number in [0, 1) for the jitter; default Math.random. */
  readonly random?: () => number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The work; a rejection or a throw counts as a failed run. */
  readonly run: () => Promise<void> | void;
}

/** A running periodic task. */
export interface PeriodicLoop {
  /**
   * Runs the task (now, or after one period) and then on schedule. Starting twice does nothing;
   * a run requested with `runNow()` before `start()` runs once and schedules nothing.
   */
  start(): void;
  /** Cancels the schedule and waits for a run in flight. The loop never runs again. */
  stop(): Promise<void>;
  /**
   * Runs the task as soon as possible: now, or right after the run in flight (calls made while one
   * is queued share it). Resolves true when that run succeeded. Restarts the period from its end.
   */
  runNow(): Promise<boolean>;
  /**
   * Changes the period. A run already scheduled at the old period is moved to one new period
   * (plus jitter) from now; a pending backoff retry and a run in flight keep their times (the run
   * after them uses the new period). Setting the current period does nothing.
   */
  setPeriodMs(periodMs: number): void;
  /** Clock time of the last successful run, undefined before the first. */
  lastSuccessAt(): number | undefined;
  /** Failed runs since the last success. */
  consecutiveFailures(): number;
}

/** Whether a pending timer is a periodic tick (a period change moves it) or a backoff retry. */
interface PendingTimer {
  readonly handle: TimerHandle;
  readonly periodic: boolean;
}

class Loop implements PeriodicLoop {
  private readonly random: () => number;
  private periodMs: number;
  private started = false;
  private stopped = false;
  private timer: PendingTimer | undefined;
  private inflight: Promise<boolean> | undefined;
  private queued: Promise<boolean> | undefined;
  private lastSuccess: number | undefined;
  private failures = 0;

  constructor(private readonly options: PeriodicLoopOptions) {
    this.random = options.random ?? Math.random;
    this.periodMs = options.periodMs;
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    // An on-demand run in flight counts as the first run; it schedules the next when it ends.
    if (this.inflight) return;
    if (this.options.firstRun === 'after-period') this.schedule(this.periodMs, true);
    else void this.execute();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer();
    await this.queued;
    await this.inflight;
    this.cancelTimer();
  }

  runNow(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    if (this.queued) return this.queued;
    if (!this.inflight) return this.execute();
    const next = this.inflight.then(() => {
      this.queued = undefined;
      return this.stopped ? false : this.execute();
    });
    this.queued = next;
    return next;
  }

  setPeriodMs(periodMs: number): void {
    if (periodMs === this.periodMs) return;
    this.periodMs = periodMs;
    if (this.timer?.periodic === true) this.schedule(this.nextPeriod(), true);
  }

  lastSuccessAt(): number | undefined {
    return this.lastSuccess;
  }

  consecutiveFailures(): number {
    return this.failures;
  }

  private nextPeriod(): number {
    return this.periodMs * (1 + this.random() * (this.options.jitter ?? 0));
  }

  private retryDelay(): number {
    return backoffDelay(this.options.backoff ?? { initialMs: this.periodMs, maxMs: this.periodMs }, this.failures);
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer.handle);
    this.timer = undefined;
  }

  private schedule(delayMs: number, periodic: boolean): void {
    this.cancelTimer();
    // Before start() there is no schedule: an on-demand run runs once.
    if (this.stopped || !this.started) return;
    const handle = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      void this.execute();
    }, delayMs);
    this.timer = { handle, periodic };
  }

  private execute(): Promise<boolean> {
    this.cancelTimer();
    const current = this.attempt().then((ok) => {
      this.inflight = undefined;
      if (ok) this.schedule(this.nextPeriod(), true);
      else this.schedule(this.retryDelay(), false);
      return ok;
    });
    this.inflight = current;
    return current;
  }

  private async attempt(): Promise<boolean> {
    const { name, logger } = this.options;
    try {
      await this.options.run();
      if (this.failures > 0) logger.info({ loop: name, failures: this.failures }, 'loop recovered');
      this.failures = 0;
      this.lastSuccess = this.options.clock.now();
      return true;
    } catch (err: unknown) {
      this.failures += 1;
      // The first failure is news; repeats of an outage are logged less loudly.
      const level = this.failures === 1 ? 'warn' : 'debug';
      logger[level]({ loop: name, failures: this.failures, retryInMs: this.retryDelay(), err }, 'loop run failed; retrying with backoff');
      return false;
    }
  }
}

/** Creates a stopped loop; call `start()`. */
export function createPeriodicLoop(options: PeriodicLoopOptions): PeriodicLoop {
  return new Loop(options);
}
