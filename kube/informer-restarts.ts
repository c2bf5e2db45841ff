/**
 * Keeps a list+watch informer running for a long-lived command (the CSR approver, redis-users): a
 * failed start or a watch error restarts it after a capped exponential backoff, one restart pending
 * at a time, none after stop(). The failure count resets when a start succeeds, or earlier when
 * the caller says a list succeeded ({@link InformerRestarts.listed}). A policy with a jitter
 * spreads each delay (client-go's reflector uses 1.0), so restarts after one shared outage do not
 * all land on the API server at once.
 */
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.js';
import type { Clock, TimerHandle } from '../util/clock.js';

/** What the restarts act on and report. */
export interface InformerRestartsOptions {
  /** The informer's start (list, then watch); rejects when it fails. */
  readonly start: () => Promise<void>;
  /** What is listed and watched, for the log line ("Nodes"). */
  readonly what: string;
  readonly backoff: BackoffPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A number in [0, 1) for the policy's jitter; default Math.random. */
  readonly random?: () => number;
}

/** See this file's header. */
export class InformerRestarts {
  private failures = 0;
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(private readonly options: InformerRestartsOptions) {}

  /** Starts the informer (again after a stop()); a failure schedules a restart. */
  start(): Promise<void> {
    this.stopped = false;
    return this.run();
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.options.start();
      this.failures = 0;
    } catch (err: unknown) {
      this.failed(err);
    }
  }

  /** The informer failed (its `error` event): restart it after the backoff, unless one is pending. */
  failed(err: unknown): void {
    if (this.stopped || this.timer !== undefined) return;
    this.failures += 1;
    const retryInMs = backoffDelay(this.options.backoff, this.failures, this.options.random);
    this.options.logger.warn({ err, failures: this.failures, retryInMs }, `listing or watching ${this.options.what} failed; restarting`);
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, retryInMs);
  }

  /** A list succeeded: the next failure starts the backoff over. */
  listed(): void {
    this.failures = 0;
  }

  /** No restart from now on. */
  stop(): void {
    this.stopped = true;
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
