/**
 * Notices when Redis may have lost queue state, so the agent can re-enqueue every pod it knows.
 *
 * Redis holds only queue state; losing it never loses a pod, but jobs (pending reconciles,
 * requeue-afters, backoff retries) vanish with it. Two signals:
 * - the connection became ready again after a disconnect (`reconnected`): the server may have
 *   restarted or failed over, and commands sent while it was away may have been dropped;
 * - a sentinel key this instance keeps alive is gone (`state-lost`): the data set was flushed
 *   (FLUSHALL/FLUSHDB, a restart without persistence, an eviction).
 * Either way the cure is the same level-triggered resync, so the cause is informational.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';

/** Why a resync is needed. */
export type ResyncCause = 'reconnected' | 'state-lost';

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
}

/** Watches one connection and sentinel; tells listeners when a resync is needed. */
export class ResyncWatcher {
  private readonly listeners = new Set<ResyncListener>();
  private checking: Promise<void> = Promise.resolve();
  private readonly ticks: PeriodicLoop;
  private stopReady: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly options: ResyncWatcherOptions) {
    // A tick joins the queue of checks and ends when its check has run; checks never throw.
    this.ticks = createPeriodicLoop({
      name: 'queue-sentinel',
      periodMs: options.intervalMs,
      firstRun: 'after-period',
      clock: options.clock,
      logger: options.logger,
      run: () => {
        this.enqueueCheck('periodic');
        return this.checking;
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
      this.enqueueCheck(reconnected ? 'after-reconnect' : 'create');
    });
    if (!initialConnect) this.enqueueCheck('create');
    this.ticks.start();
  }

  /** Stops watching and deletes the sentinel (best effort). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopReady?.();
    await this.ticks.stop();
    await this.checking;
    await this.options.store.remove().catch((err: unknown) => {
      this.options.logger.debug({ err }, 'could not delete the queue sentinel');
    });
  }

  /** Resolves once every check queued so far has run (for tests and orderly shutdown). */
  async settled(): Promise<void> {
    await this.checking;
  }

  private enqueueCheck(kind: 'create' | 'periodic' | 'after-reconnect'): void {
    // Checks run one at a time so a reconnect and a timer tick cannot both report one loss.
    this.checking = this.checking.then(() => this.check(kind));
  }

  private async check(kind: 'create' | 'periodic' | 'after-reconnect'): Promise<void> {
    if (this.stopped) return;
    const { store, logger } = this.options;
    try {
      if (kind === 'create') {
        await store.create();
        return;
      }
      const present = await store.refresh();
      if (!present) {
        await store.create();
        this.fire('state-lost');
      } else if (kind === 'after-reconnect') {
        this.fire('reconnected');
      }
    } catch (err) {
      // Redis is unreachable right now; the next `ready` or tick checks again.
      logger.debug({ err, kind }, 'queue sentinel check failed');
      if (kind === 'after-reconnect') this.fire('reconnected');
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
