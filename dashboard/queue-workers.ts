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

/** The queue client name a connection name may belong to: itself, or what precedes one of its `:w:`. */
function* queueClientNamesOf(connectionName: string): Generator<string> {
  yield connectionName;
  for (let at = connectionName.indexOf(':w:'); at >= 0; at = connectionName.indexOf(':w:', at + 1)) yield connectionName.slice(0, at);
}

const clientNameOf = (queue: Queue): string => queueClientName(queue.opts.prefix ?? 'bull', queue.name);

/** The connected clients of every server behind one connection, shared by every queue's question. */
export class ClientListing {
  private listing: { readonly at: number; readonly clients: Promise<ClientRecord[] | undefined> } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly clock: Clock,
    private readonly maxAgeMs = CLIENT_LISTING_MAX_AGE_MS,
  ) {}

  /**
   * Every connection of every server (every primary of a cluster), read at most once per
   * `maxAgeMs` (concurrent askers share one read); undefined when it cannot be had: Redis refuses
   * the command (some hosted Redis do) or a server does not answer (a shard down). Pages then
   * show the workers as unknown rather than failing.
   */
  clients(): Promise<ClientRecord[] | undefined> {
    const now = this.clock.now();
    if (this.listing === undefined || now - this.listing.at > this.maxAgeMs) this.listing = { at: now, clients: this.read() };
    return this.listing.clients;
  }

  private async read(): Promise<ClientRecord[] | undefined> {
    const servers = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
    try {
      const lists = await Promise.all(servers.map(async (server) => String(await server.client('LIST'))));
      return lists.flatMap(parseClientList);
    } catch {
      return undefined;
    }
  }

  /** The workers of each of `queues`, by queue name; undefined when Redis cannot tell. */
  async workersByQueue(queues: readonly Queue[]): Promise<Map<string, ClientRecord[]> | undefined> {
    const clients = await this.clients();
    if (clients === undefined) return undefined;
    const byClientName = new Map(queues.map((q) => [clientNameOf(q), q.name]));
    const workers = new Map(queues.map((q): [string, ClientRecord[]] => [q.name, []]));
    for (const client of clients) {
      const rawname = client.name ?? '';
      if (rawname === '') continue;
      for (const candidate of queueClientNamesOf(rawname)) {
        const queue = byClientName.get(candidate);
        if (queue === undefined) continue;
        workers.get(queue)?.push({ ...client, name: queue, rawname });
        break;
      }
    }
    return workers;
  }

  /** How many workers each of `queues` has, by queue name; undefined when Redis cannot tell. */
  async workersPerQueue(queues: readonly Queue[]): Promise<Map<string, number> | undefined> {
    const workers = await this.workersByQueue(queues);
    return workers === undefined ? undefined : new Map([...workers].map(([name, list]) => [name, list.length]));
  }
}
