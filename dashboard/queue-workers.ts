/**
 * Which workers are connected to each node queue, for the dashboard's overview and bull-board's
 * queue list: one `CLIENT LIST` per Redis server (every primary of a cluster) serves every queue,
 * and is read again at most every couple of seconds however many pages ask.
 *
 * Why not BullMQ's `getWorkers()`: it lists every client of the server (of every server of a
 * cluster) for one queue. Asked per queue, as the overview and bull-board's list (polled by its
 * UI) did, a page of a fleet's queues cost Redis queues × connections lines: at 5,000 nodes on one
 * Redis, 5,000 listings of 10,000 connections each, on the thread every agent's queue waits on.
 *
 * A queue's workers are the clients BullMQ counts as its workers: named exactly the queue's client
 * name (unnamed workers) or starting with it and `:w:` (named ones, nodelet's). Records are
 * BullMQ's: the `CLIENT LIST` fields, `name` the queue's name and `rawname` the connection's.
 */
import { Cluster } from 'ioredis';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../controllers/queue/redis.js';
import { queueClientName } from '../controllers/queue/orphan-recovery.js';
import { parseClientList, type ClientRecord } from '../controllers/queue/client-list.js';
import type { Clock } from '../util/clock.js';

/** How old a listing may be when it is used again. */
export const CLIENT_LISTING_MAX_AGE_MS = 2_000;

/** The queue client names a connection name may belong to: itself, and what precedes each of its `:w:`. */
function* queueClientNamesOf(connectionName: string): Generator<string> {
  yield connectionName;
  for (let at = connectionName.indexOf(':w:'); at >= 0; at = connectionName.indexOf(':w:', at + 1)) yield connectionName.slice(0, at);
}

const clientNameOf = (queue: Queue): string => queueClientName(queue.opts.prefix ?? 'bull', queue.name);

/** Connections by the queue client name they may belong to (see {@link queueClientNamesOf}), each with its `rawname`. */
type ClientIndex = ReadonlyMap<string, readonly ClientRecord[]>;

function indexByQueueClientName(clients: readonly ClientRecord[]): ClientIndex {
  const index = new Map<string, ClientRecord[]>();
  for (const client of clients) {
    const rawname = client.name ?? '';
    if (rawname === '') continue;
    const record = { ...client, rawname };
    for (const candidate of queueClientNamesOf(rawname)) {
      const list = index.get(candidate);
      if (list === undefined) index.set(candidate, [record]);
      else list.push(record);
    }
  }
  return index;
}

/** The connected clients of every server behind one connection, shared by every queue's question. */
export class ClientListing {
  private listing: { readonly at: number; readonly index: Promise<ClientIndex | undefined> } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly clock: Clock,
    private readonly maxAgeMs = CLIENT_LISTING_MAX_AGE_MS,
  ) {}

  /**
   * Every connection of every server (every primary of a cluster), read and indexed at most once
   * per `maxAgeMs` (concurrent askers share one read: bull-board asks queue by queue); undefined
   * when it cannot be had: Redis refuses the command (some hosted Redis do) or a server does not
   * answer (a shard down). Pages then show the workers as unknown rather than failing.
   */
  private clients(): Promise<ClientIndex | undefined> {
    const now = this.clock.now();
    if (this.listing === undefined || now - this.listing.at > this.maxAgeMs) this.listing = { at: now, index: this.read() };
    return this.listing.index;
  }

  private async read(): Promise<ClientIndex | undefined> {
    const servers = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
    try {
      const lists = await Promise.all(servers.map(async (server) => String(await server.client('LIST'))));
      return indexByQueueClientName(lists.flatMap(parseClientList));
    } catch {
      return undefined;
    }
  }

  /** The workers of each of `queues`, by queue name; undefined when Redis cannot tell. */
  async workersByQueue(queues: readonly Queue[]): Promise<Map<string, ClientRecord[]> | undefined> {
    const index = await this.clients();
    if (index === undefined) return undefined;
    return new Map(queues.map((q) => [q.name, (index.get(clientNameOf(q)) ?? []).map((client) => ({ ...client, name: q.name }))]));
  }

  /** How many workers each of `queues` has, by queue name; undefined when Redis cannot tell. */
  async workersPerQueue(queues: readonly Queue[]): Promise<Map<string, number> | undefined> {
    const index = await this.clients();
    if (index === undefined) return undefined;
    return new Map(queues.map((q) => [q.name, index.get(clientNameOf(q))?.length ?? 0]));
  }
}
