/**
 * Finds every node's reconcile queue in Redis and keeps the set current: a periodic SCAN for keys
 * `<prefix>:nodelet-reconcile-<node>:*` (any key of the queue counts, so a queue whose `meta`
 * was lost in a flush is still found by its jobs or events). New queues are opened and announced,
 * queues whose keys are all gone are closed and withdrawn. The dashboard never writes to a queue
 * it merely looks at (`skipMetasUpdate`).
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { createPeriodicLoop } from '../util/periodic-loop.js';
import type { PeriodicLoop } from '../util/periodic-loop.js';
import { reconcileQueueName } from '../controllers/queue/redis.js';

/** One node's queue, opened for reading. */
export interface NodeQueue {
  readonly node: string;
  /** `nodelet-reconcile-<node>`. */
  readonly name: string;
  readonly queue: Queue;
}

/** Called when a queue appears or disappears. */
export interface QueueDirectoryListener {
  added(entry: NodeQueue): void;
  removed(entry: NodeQueue): void;
}

/** Options of {@link QueueDirectory}. */
export interface QueueDirectoryOptions {
  /** Shared by every opened queue; the directory does not close it. */
  readonly redis: Redis;
  readonly prefix: string;
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly listener: QueueDirectoryListener;
}

// A DNS-1123 subdomain: what Kubernetes allows as a node name.
const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The node whose reconcile queue owns `key`, or undefined for any other key. */
export function nodeOfQueueKey(key: string, prefix: string): string | undefined {
  const start = `${prefix}:${reconcileQueueName('')}`;
  if (!key.startsWith(start)) return undefined;
  const rest = key.slice(start.length);
  const colon = rest.indexOf(':');
  if (colon <= 0) return undefined;
  const node = rest.slice(0, colon);
  return NODE_NAME.test(node) ? node : undefined;
}

/** The nodes that have a reconcile queue in Redis, sorted. */
export async function scanQueueNodes(redis: Pick<Redis, 'scan'>, prefix: string): Promise<string[]> {
  const pattern = `${prefix}:${reconcileQueueName('')}*`;
  const nodes = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    for (const key of keys) {
      const node = nodeOfQueueKey(key, prefix);
      if (node !== undefined) nodes.add(node);
    }
    cursor = next;
  } while (cursor !== '0');
  return [...nodes].sort();
}

/** The set of node queues, refreshed on a period. */
export class QueueDirectory {
  private readonly queues = new Map<string, NodeQueue>();
  private readonly loop: PeriodicLoop;
  private stopped = false;

  constructor(private readonly options: QueueDirectoryOptions) {
    this.loop = createPeriodicLoop({
      name: 'queue-discovery',
      periodMs: options.intervalMs,
      backoff: { initialMs: 1000, maxMs: options.intervalMs },
      clock: options.clock,
      logger: options.logger,
      run: () => this.sync(),
    });
  }

  /** Scans now and then every interval. */
  start(): void {
    this.loop.start();
  }

  /** Scans now; resolves true when the scan succeeded. */
  refresh(): Promise<boolean> {
    return this.loop.runNow();
  }

  /** The known queues, sorted by node. */
  list(): NodeQueue[] {
    return [...this.queues.values()].sort((a, b) => a.node.localeCompare(b.node));
  }

  get(node: string): NodeQueue | undefined {
    return this.queues.get(node);
  }

  /** Stops scanning and closes every queue it opened. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
    const entries = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(entries.map((entry) => closeQuietly(entry.queue)));
  }

  private async sync(): Promise<void> {
    const found = new Set(await scanQueueNodes(this.options.redis, this.options.prefix));
    if (this.stopped) return;
    for (const node of found) {
      if (!this.queues.has(node)) this.add(node);
    }
    for (const [node, entry] of this.queues) {
      if (found.has(node)) continue;
      this.queues.delete(node);
      this.options.logger.info({ node, queue: entry.name }, 'queue gone');
      this.options.listener.removed(entry);
      await closeQuietly(entry.queue);
    }
  }

  private add(node: string): void {
    const name = reconcileQueueName(node);
    const queue = new Queue(name, { connection: this.options.redis, prefix: this.options.prefix, skipMetasUpdate: true });
    queue.on('error', (err) => {
      this.options.logger.debug({ err, queue: name }, 'queue error');
    });
    const entry: NodeQueue = { node, name, queue };
    this.queues.set(node, entry);
    this.options.logger.info({ node, queue: name }, 'queue found');
    this.options.listener.added(entry);
  }
}

async function closeQuietly(queue: Queue): Promise<void> {
  await queue.close().catch(() => undefined);
}
