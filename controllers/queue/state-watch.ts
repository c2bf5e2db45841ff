/**
 * Notices when Redis may have lost queue state, so the agent can re-enqueue every pod it knows.
 *
 * Redis holds only queue state; losing it never loses a pod, but jobs (pending reconciles,
 * requeue-afters, backoff retries) vanish with it. Two signals:
 * - the connection became ready again after a disconnect (`reconnected`): the server may have
 *   restarted or failed over, and commands sent while it was away may have been dropped;
 * - a sentinel key this instance keeps alive is gone (`state-lost`): the data set was flushed
 *   (FLUSHALL/FLUSHDB, a restart without persistence, an eviction).
 * - a request to the queue failed (an enqueue, a resync's look-up: `requests-failed`): the pod's
 *   event never reached Redis, and the agent dropped it. Once Redis answers the sentinel check
 *   again, after a backoff (1 s doubling to 10 s, jittered by up to half, one timer however many
 *   failed), a resync covers it. Without this, a pod changed while its queue's Redis refused
 *   (and not covered by a reconnect's resync: the connection never dropped, or the reconnect
 *   resync's own enqueues were refused, as while a cluster client finds a restarted shard again)
 *   waited for the periodic resync, up to a minute.
 * Either way the cure is the same level-triggered resync, so the cause is informational.
 *
 * The sentinel's refresh is also the agent's proof that Redis answers: the NodeAgent's health
 * sample calls {@link ResyncWatcher.probe} (one command), and the periodic check skips its tick
 * when a check succeeded within the last interval, so the two never both spend a command.
 */
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import { ReconcileQueueStateError } from './errors.js';

/** Why a resync is needed. */
export type ResyncCause = 'reconnected' | 'state-lost' | 'requests-failed';

/** How soon a resync follows failed requests (see the file's header). */
export const REPAIR_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 10_000, jitter: 0.5 };

type CheckKind = 'create' | 'periodic' | 'after-reconnect' | 'repair';

/** Called when the queue may have lost jobs; expected to re-enqueue every known pod. */
export type ResyncListener = (cause: ResyncCause) => void | Promise<void>;

/** The sentinel key and the connection's readiness, as the watcher needs them. */
export interface SentinelStore {
  /** True when the connection is ready now. */
  isReady(): boolean;
  /** Calls `listener` each time the connection becomes ready; returns an unsubscribe function. */
  onReady(listener: () => void): () => void;
  /** Creates (or overwrites) the sentinel. */
  create(): Promise<void>;
  /** Extends the sentinel's life; resolves false when it no longer exists. */
  refresh(): Promise<boolean>;
  /** Deletes the sentinel. */
  remove(): Promise<void>;
}

/** What a {@link ResyncWatcher} needs. */
export interface ResyncWatcherOptions {
  readonly store: SentinelStore;
  /** How often to check the sentinel, in milliseconds. */
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly clock: Clock;
  /** A number in [0, 1) for the repair backoff's jitter; default Math.random. */
  readonly random?: () => number;
}

/** Watches one connection and sentinel; tells listeners when a resync is needed. */
export class ResyncWatcher {
  private readonly listeners = new Set<ResyncListener>();
  private checking: Promise<void> = Promise.resolve();
  private readonly ticks: PeriodicLoop;
  private stopReady: (() => void) | undefined;
  private stopped = false;
  /** Clock time of the last check Redis answered; a periodic tick within an interval of it is skipped. */
  private lastAnsweredAt: number | undefined;
  /** The pending resync after failed requests, and how many backoffs in a row led to it. */
  private repairTimer: TimerHandle | undefined;
  private repairAttempts = 0;

  private readonly random: () => number;

  constructor(private readonly options: ResyncWatcherOptions) {
    this.random = options.random ?? Math.random;
    // A tick joins the queue of checks and ends when its check has run; checks never throw.
    this.ticks = createPeriodicLoop({
      name: 'queue-sentinel',
      periodMs: options.intervalMs,
      firstRun: 'after-period',
      clock: options.clock,
      logger: options.logger,
      run: async () => {
        const last = this.lastAnsweredAt;
        if (last !== undefined && options.clock.now() - last < options.intervalMs) return;
        await this.enqueueCheck('periodic');
      },
    });
  }

  /** Subscribes `listener`; returns an unsubscribe function. */
  onResync(listener: ResyncListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Creates the sentinel and starts watching. The first `ready` of a connection that is still
   * connecting is its initial connect, not a reconnect, and fires nothing.
   */
  start(): void {
    const { store } = this.options;
    let initialConnect = !store.isReady();
    this.stopReady = store.onReady(() => {
      const reconnected = !initialConnect;
      initialConnect = false;
      void this.enqueueCheck(reconnected ? 'after-reconnect' : 'create');
    });
    if (!initialConnect) void this.enqueueCheck('create');
    this.ticks.start();
  }

  /**
   * A request to the queue failed: a pod's event may be missing from Redis. Schedules a check
   * after the backoff, which fires a resync (`requests-failed`) once Redis answers; while one is
   * pending, further failures add nothing.
   */
  requestFailed(): void {
    if (this.stopped || this.repairTimer !== undefined) return;
    this.repairAttempts += 1;
    this.repairTimer = this.options.clock.setTimeout(() => {
      this.repairTimer = undefined;
      void this.enqueueCheck('repair');
    }, backoffDelay(REPAIR_BACKOFF, this.repairAttempts, this.random));
  }

  /** A request to the queue succeeded: the next failure starts the backoff over. */
  requestSucceeded(): void {
    this.repairAttempts = 0;
  }

  /** Stops watching and deletes the sentinel (best effort). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.repairTimer !== undefined) this.options.clock.clearTimeout(this.repairTimer);
    this.repairTimer = undefined;
    this.stopReady?.();
    await this.ticks.stop();
    await this.checking;
    await this.options.store.remove().catch((err: unknown) => {
      this.options.logger.debug({ err }, 'could not delete the queue sentinel');
    });
  }

  /**
   * Checks the sentinel now, as the periodic check does (a missing one is created and a resync
   * fired): one command, the health sample's proof that Redis answers. Resolves once Redis
   * answered; rejects with what failed (Redis unreachable, or the watcher stopped).
   */
  async probe(): Promise<void> {
    if (this.stopped) throw new ReconcileQueueStateError('the queue sentinel is no longer watched');
    const failure = await this.enqueueCheck('periodic');
    if (failure !== undefined) throw failure;
  }

  /** Resolves once every check queued so far has run (for tests and orderly shutdown). */
  async settled(): Promise<void> {
    await this.checking;
  }

  /** Queues a check; resolves with what made it fail (undefined when Redis answered). Never rejects. */
  private enqueueCheck(kind: CheckKind): Promise<Error | undefined> {
    // Checks run one at a time so a reconnect and a timer tick cannot both report one loss.
    const outcome = this.checking.then(() => this.check(kind));
    this.checking = outcome.then(() => undefined);
    return outcome;
  }

  /** Runs one check; resolves with what made it fail, or undefined when Redis answered. */
  private async check(kind: CheckKind): Promise<Error | undefined> {
    if (this.stopped) return new ReconcileQueueStateError('the queue sentinel is no longer watched');
    const { store, logger } = this.options;
    try {
      if (kind === 'create') {
        await store.create();
      } else {
        const present = await store.refresh();
        if (!present) {
          await store.create();
          this.fire('state-lost');
        } else if (kind === 'after-reconnect') {
          this.fire('reconnected');
        } else if (kind === 'repair') {
          this.fire('requests-failed');
        }
      }
      this.lastAnsweredAt = this.options.clock.now();
      return undefined;
    } catch (err) {
      // Redis is unreachable right now; the next `ready` or tick checks again.
      logger.debug({ err, kind }, 'queue sentinel check failed');
      if (kind === 'after-reconnect') this.fire('reconnected');
      if (kind === 'repair') this.requestFailed(); // still refused: try again after a longer wait
      return err instanceof Error ? err : new Error('queue sentinel check failed', { cause: err });
    }
  }

  private fire(cause: ResyncCause): void {
    const { logger } = this.options;
    logger.warn({ cause }, 'queue state may be lost; asking for a full resync');
    for (const listener of this.listeners) {
      try {
        const result = listener(cause);
        if (result instanceof Promise) {
          result.catch((err: unknown) => {
            logger.error({ err, cause }, 'resync listener failed');
          });
        }
      } catch (err) {
        logger.error({ err, cause }, 'resync listener failed');
      }
    }
  }
}
