/**
 * `nodelet redis-users`' loop: keeps Redis' ACL users what the Nodes call for (desired.ts). It
 * applies the plan when a Node changes (batched), when Redis (re)connects (a restarted Redis without
 * persistence has lost its users) and every resync period; a failed pass is retried with backoff.
 * It holds the admin password; the nodes never do.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.js';
import type { Clock, TimerHandle } from '../util/clock.js';
import { planAcl, type DashboardUser } from './desired.js';

/** The Nodes as last seen, and a way to hear of changes. */
export interface NodeSource {
  list(): readonly V1Node[];
  onChange(listener: () => void): void;
}

/** What the controller is built from. */
export interface QueueUsersOptions {
  readonly nodes: NodeSource;
  /** An admin connection (the default user, or one allowed ACL). */
  readonly redis: Redis;
  readonly dashboard: DashboardUser | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly prefix?: string;
  /** Default 60 s. */
  readonly resyncMs?: number;
  /** Changes arriving within this window are applied together (default 200 ms). */
  readonly batchMs?: number;
  readonly backoff?: BackoffPolicy;
}

const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 60_000 };

/** See this file's header. */
export class QueueUsersController {
  private timer: TimerHandle | undefined;
  private dueAt = Number.POSITIVE_INFINITY;
  private failures = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: QueueUsersOptions) {}

  /** Applies the plan now and on every change, reconnect and resync. */
  start(): void {
    this.options.nodes.onChange(() => { this.schedule(this.options.batchMs ?? 200); });
    this.options.redis.on('ready', () => { this.schedule(0); });
    this.schedule(0);
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.options.clock.clearTimeout(this.timer);
    return this.running ?? Promise.resolve();
  }

  /** One pass: resolves once the plan is applied (for tests and the first start). */
  async applyNow(): Promise<void> {
    const { redis, nodes, dashboard, logger } = this.options;
    const existingUsers = (await redis.call('ACL', 'USERS')) as string[];
    const plan = planAcl({ nodes: nodes.list(), dashboard, existingUsers, ...(this.options.prefix === undefined ? {} : { prefix: this.options.prefix }) });
    for (const { user, rules } of plan.set) await redis.call('ACL', 'SETUSER', user, ...rules);
    if (plan.delete.length > 0) await redis.call('ACL', 'DELUSER', ...plan.delete);
    logger.debug({ set: plan.set.length, deleted: plan.delete }, 'redis users applied');
    if (plan.delete.length > 0) logger.info({ deleted: plan.delete }, 'removed the Redis users of nodes that are gone');
  }

  /** Runs a pass after `delayMs`, unless one is due sooner. */
  private schedule(delayMs: number): void {
    if (this.stopped) return;
    const at = this.options.clock.now() + delayMs;
    if (at >= this.dueAt) return;
    this.options.clock.clearTimeout(this.timer);
    this.dueAt = at;
    this.timer = this.options.clock.setTimeout(() => {
      this.dueAt = Number.POSITIVE_INFINITY;
      this.run();
    }, delayMs);
  }

  private run(): void {
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = this.applyNow().then(
      () => {
        this.failures = 0;
        this.schedule(this.options.resyncMs ?? 60_000);
      },
      (err: unknown) => {
        this.failures += 1;
        const retryInMs = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures);
        this.options.logger.warn({ err, retryInMs }, 'applying the Redis users failed; retrying');
        this.schedule(retryInMs);
      },
    ).finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.schedule(0);
      }
    });
  }
}
