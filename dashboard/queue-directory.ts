/**
 * Finds every node's reconcile queue in Redis and keeps the set current: a periodic SCAN for keys
 * `<prefix>:nodelet-reconcile-<node>:*` (any key of the queue counts, so a queue whose `meta`
 * was lost in a flush is still found by its jobs or events). New queues are opened and announced,
 * queues whose keys are all gone are closed and withdrawn. The dashboard never writes to a queue
 * it merely looks at (`skipMetasUpdate`).
 *
 * On a Redis Cluster the queues' keys are hash-tagged (`{<prefix>:<node>}:nodelet-reconcile-<node>:*`,
 * see `nodeQueueKeyspace`) and spread over the shards, and SCAN reads one server's keys only: every
 * primary that owns slots is scanned. When one of them does not answer (or the slot map has an
 * unowned slot), the scan is partial: the queues it found are added, and none is withdrawn, since
 * the missing shard may hold the keys of a queue known so far.
 */
import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { createPeriodicLoop } from '../util/periodic-loop.js';
import type { PeriodicLoop } from '../util/periodic-loop.js';
import { nodeQueueKeyspace, reconcileQueueName, type RedisClient } from '../controllers/queue/redis.js';

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
  readonly redis: RedisClient;
  readonly layout: QueueLayout;
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly listener: QueueDirectoryListener;
}

// A DNS-1123 subdomain: what Kubernetes allows as a node name.
const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** How the agents laid out their queues' keys: the prefix they were given, hash-tagged on a cluster. */
export interface QueueLayout {
  readonly prefix: string;
  readonly hashTagged: boolean;
}

/** The node whose reconcile queue owns `key` under `layout`, or undefined for any other key. */
export function nodeOfQueueKey(key: string, layout: QueueLayout): string | undefined {
  const node = layout.hashTagged ? taggedNodeOf(key, layout.prefix) : untaggedNodeOf(key, layout.prefix);
  return node !== undefined && NODE_NAME.test(node) ? node : undefined;
}

/** `<prefix>:nodelet-reconcile-<node>:…` */
function untaggedNodeOf(key: string, prefix: string): string | undefined {
  const start = `${prefix}:${reconcileQueueName('')}`;
  if (!key.startsWith(start)) return undefined;
  const rest = key.slice(start.length);
  const colon = rest.indexOf(':');
  return colon <= 0 ? undefined : rest.slice(0, colon);
}

/** `{<prefix>:<node>}:nodelet-reconcile-<node>:…`: the tag and the queue name must name the same node. */
function taggedNodeOf(key: string, prefix: string): string | undefined {
  const start = `{${prefix}:`;
  if (!key.startsWith(start)) return undefined;
  const close = key.indexOf('}', start.length);
  if (close <= start.length) return undefined;
  const node = key.slice(start.length, close);
  return key.startsWith(`}:${reconcileQueueName(node)}:`, close) ? node : undefined;
}

/** The SCAN pattern of every queue's keys under `layout`. */
export function queueKeyPattern(layout: QueueLayout): string {
  return layout.hashTagged ? `{${layout.prefix}:*}:${reconcileQueueName('')}*` : `${layout.prefix}:${reconcileQueueName('')}*`;
}

/** The nodes that have a reconcile queue in one Redis server, sorted. */
export async function scanQueueNodes(redis: Pick<Redis, 'scan'>, layout: QueueLayout): Promise<string[]> {
  const pattern = queueKeyPattern(layout);
  const nodes = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    for (const key of keys) {
      const node = nodeOfQueueKey(key, layout);
      if (node !== undefined) nodes.add(node);
    }
    cursor = next;
  } while (cursor !== '0');
  return [...nodes].sort();
}

/** What a scan of every primary found, and whether every primary answered. */
export interface QueueScan {
  readonly nodes: readonly string[];
  readonly complete: boolean;
  /** Primaries asked: 0 on a cluster whose client has no slot map yet (it is still connecting). */
  readonly primaries: number;
}

/** A scan that could ask no primary at all: the cluster client has not loaded its slot map yet. */
export class NoPrimaryKnownError extends Error {
  constructor() {
    super('no Redis primary known yet: the cluster client has not loaded the slot map');
    this.name = 'NoPrimaryKnownError';
  }
}

/** What the scan needs of a cluster client (ioredis' `Cluster`). */
export type ClusterView = Pick<Cluster, 'slots' | 'nodes' | 'refreshSlotsCache'>;

/**
 * The primaries that own the slots, as the client's slot map says, and whether they are all of
 * them (every slot owned, every owner in the client's pool). An owner missing from the pool (its
 * connection ended when it went away) is looked up again through a refresh of the slot map.
 */
export async function clusterPrimaries(cluster: ClusterView): Promise<{ readonly primaries: readonly Pick<Redis, 'scan'>[]; readonly complete: boolean }> {
  const owners = (): { keys: Set<string>; covered: boolean } => {
    const keys = new Set<string>();
    let covered = true;
    for (let slot = 0; slot < 16384; slot += 1) {
      const owner = cluster.slots[slot]?.[0];
      if (owner === undefined) covered = false;
      else keys.add(owner);
    }
    return { keys, covered };
  };
  const inPool = (): Map<string, Redis> => new Map(cluster.nodes('master').map((n) => [`${n.options.host ?? ''}:${n.options.port ?? 0}`, n]));
  let known = owners();
  if ([...known.keys].some((key) => !inPool().has(key)) || !known.covered) {
    await new Promise<void>((resolve) => {
      cluster.refreshSlotsCache(() => {
        resolve();
      });
    });
    known = owners();
  }
  const pool = inPool();
  const primaries = [...known.keys].flatMap((key) => pool.get(key) ?? []);
  return { primaries, complete: known.covered && known.keys.size > 0 && primaries.length === known.keys.size };
}

/**
 * The nodes that have a reconcile queue, over every primary: the one Redis (a failure rejects), or
 * each primary of a cluster (a primary that fails makes the scan partial).
 */
export async function scanEveryPrimary(redis: RedisClient, layout: QueueLayout): Promise<QueueScan> {
  if (!isCluster(redis)) return { nodes: await scanQueueNodes(redis, layout), complete: true, primaries: 1 };
  const { primaries, complete } = await clusterPrimaries(redis);
  const scans = await Promise.allSettled(primaries.map((primary) => scanQueueNodes(primary, layout)));
  const nodes = new Set(scans.flatMap((scan) => (scan.status === 'fulfilled' ? scan.value : [])));
  return { nodes: [...nodes].sort(), complete: complete && scans.every((scan) => scan.status === 'fulfilled'), primaries: primaries.length };
}

function isCluster(redis: RedisClient): redis is Cluster {
  return 'isCluster' in redis && redis.isCluster;
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
    const scan = await scanEveryPrimary(this.options.redis, this.options.layout);
    if (this.stopped) return;
    // A just-started dashboard's cluster client may not have its slot map yet: failing the scan
    // retries it within a second (the loop's backoff) instead of showing no queue for a period.
    if (scan.primaries === 0) throw new NoPrimaryKnownError();
    const found = new Set(scan.nodes);
    for (const node of found) {
      if (!this.queues.has(node)) this.add(node);
    }
    if (!scan.complete) {
      this.options.logger.warn({ found: found.size }, 'some Redis primaries did not answer the queue scan; keeping every known queue');
      return;
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
    const { name, prefix } = nodeQueueKeyspace(node, this.options.layout);
    const queue = new Queue(name, { connection: this.options.redis, prefix, skipMetasUpdate: true });
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
