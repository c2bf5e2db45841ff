/**
 * Redis-facing pieces of the reconcile queue: its connection and the fail-fast of its own commands,
 * job identity and options, the queue sentinel, and the two places that read BullMQ's keys
 * directly (the resync's look at the deduplication keys, the script that drops a pending payload).
 */
import { randomBytes } from 'node:crypto';
import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import type { JobsOptions, KeepJobs } from 'bullmq';
import type { Logger } from 'pino';
import type { PodKey } from '../../util/pod-key.js';
import type { SentinelStore } from './state-watch.js';
import { RedisUnavailableError } from './errors.js';

/** What a job carries: the UID plus namespace/name for humans, and why it was enqueued. Never the pod. */
export interface ReconcileJobData {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly reason: string;
}

/** The BullMQ job name of every reconcile job. */
export const RECONCILE_JOB_NAME = 'reconcile';

/** The queue of one node. */
export function reconcileQueueName(nodeName: string): string {
  return `nodelet-reconcile-${nodeName}`;
}

/** Where one node's queue lives in Redis: BullMQ's key prefix and queue name (keys `<prefix>:<name>:<type>`). */
export interface QueueKeyspace {
  readonly prefix: string;
  readonly name: string;
}

/**
 * The keyspace of `nodeName`'s queue. On one Redis (single, sidecar, Sentinel, external): prefix
 * `<prefix>`, keys `nodelet:nodelet-reconcile-<node>:…`, as every release before Redis Cluster
 * support wrote them (existing queues, their history and the node users' key patterns stay valid).
 * On a Redis Cluster (`hashTagged`): prefix `{<prefix>:<node>}`, keys
 * `{nodelet:<node>}:nodelet-reconcile-<node>:…`. Redis Cluster hashes only the text between the
 * first `{` and `}` of a key, so every key of one node's queue falls in one slot, on one shard:
 * BullMQ's scripts, which touch many keys of a queue at once, and nodelet's own commands on the
 * queue's keys (the sentinel key, the resync's MGET of deduplication keys, the orphan claim, the
 * pending-payload drop, all built with `queue.toKey`) stay single-slot, while different nodes'
 * queues spread over the slots. The tag is in the prefix, not the queue name (BullMQ takes
 * either): the name stays `nodelet-reconcile-<node>`, as the dashboard, logs and metrics show it.
 */
export function nodeQueueKeyspace(nodeName: string, options: { readonly prefix: string; readonly hashTagged: boolean }): QueueKeyspace {
  const name = reconcileQueueName(nodeName);
  return { prefix: options.hashTagged ? `{${options.prefix}:${nodeName}}` : options.prefix, name };
}

/** A client of either kind: one Redis (or a Sentinel-found master), or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * A fresh job ID for one enqueue of `uid`: the UID (readable in a dashboard) plus a time-ordered
 * random suffix. Job IDs must be unique per enqueue, not per UID: finished jobs stay in the
 * history under their ID, and BullMQ turns an add whose ID exists into a no-op. BullMQ rejects
 * `:` in custom IDs, which Kubernetes UIDs never contain; it is replaced to be safe.
 */
export function newJobId(uid: string, nowMs: number): string {
  return `${uid.replaceAll(':', '_')}.${nowMs.toString(36)}${randomBytes(3).toString('hex')}`;
}

/** How many finished jobs of each kind Redis keeps for the dashboard. */
export interface JobHistory {
  /** At most this many completed (and, separately, failed) jobs. */
  readonly count: number;
  /** Finished jobs older than this many seconds are dropped. */
  readonly ageSeconds: number;
  /** Log lines (one per run) kept per job. */
  readonly logsPerJob: number;
}

/** Defaults: enough for a dashboard, small enough to never matter to Redis. */
export const DEFAULT_HISTORY: JobHistory = { count: 1000, ageSeconds: 3600, logsPerJob: 50 };

/**
 * Options of every enqueue: deduplication by UID. What BullMQ 6.7.0's scripts do with each
 * deduplication option (`includes/deduplicateJob*.lua`, `storeDeduplicatedNextJob.lua`,
 * `requeueDeduplicatedJob.lua`), and what we pick:
 * - `keepLastIfActive` (used): while the UID's job is active, an add stores its payload once
 *   (latest wins) and becomes a new job when the active one finishes, completed or failed. The
 *   deduplication key then never expires while the job lives: it is the per-UID lock.
 * - `ttl` (not used): the key expires after `ttl` ms, letting a second job of the UID in while the
 *   first still runs; ignored anyway with `keepLastIfActive`.
 * - `extend` (not used): with `ttl`, each duplicate renews the window (a debounce).
 * - `replace` (not used): if the UID's job is delayed, delete it and add the new one (new ID,
 *   discarded run log); `reschedule` gets "run now" without losing the job.
 * - `reschedule` (used): if the UID's job is delayed, move it to the add's delay (0 for an
 *   event), keeping the job. Adds are always immediate, so this only ever makes it earlier.
 */
export function enqueueOptions(uid: string, jobId: string, history: JobHistory): JobsOptions {
  const keep: KeepJobs = { count: history.count, age: history.ageSeconds };
  return {
    jobId,
    deduplication: { id: uid, keepLastIfActive: true, reschedule: true },
    removeOnComplete: keep,
    removeOnFail: keep,
    keepLogs: history.logsPerJob,
  };
}

/**
 * Options of a job added only when the UID has none: BullMQ's simple deduplication mode ignores
 * the add while the UID's deduplication key is held by a job in any state, and keeps no payload
 * for after an active run.
 */
export function idleEnqueueOptions(uid: string, jobId: string, history: JobHistory): JobsOptions {
  return { ...enqueueOptions(uid, jobId, history), deduplication: { id: uid } };
}

/** The job data of `ref`. */
export function jobDataOf(ref: PodKey, reason: string): ReconcileJobData {
  return { uid: ref.uid, namespace: ref.namespace, name: ref.name, reason };
}

/** One Redis server's address: a Sentinel to ask for the current master, or a Redis Cluster node. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/** One Redis Sentinel to ask for the current master. */
export type SentinelAddress = RedisAddress;

/**
 * Redis through Sentinel (a replicated Redis with failover): ioredis asks the sentinels for the
 * master of `masterName`, connects to it, and asks again after a failover. Without it the URL's
 * Redis is used.
 */
export interface SentinelSettings {
  readonly sentinels: readonly SentinelAddress[];
  readonly masterName: string;
}

/** How one connection behaves: its name in `CLIENT LIST`, and ioredis' per-command retry limit. */
export interface ConnectionRole {
  readonly connectionName: string;
  readonly maxRetriesPerRequest: number | null;
}

/**
 * The ioredis options of a connection: the role's, plus the sentinels and master name when
 * `sentinel` is given (the URL then supplies only the password and database, if any).
 */
export function connectionOptions(role: ConnectionRole, sentinel: SentinelSettings | undefined): RedisOptions {
  const base: RedisOptions = { maxRetriesPerRequest: role.maxRetriesPerRequest, connectionName: role.connectionName };
  if (sentinel === undefined) return base;
  return { ...base, sentinels: sentinel.sentinels.map((s) => ({ host: s.host, port: s.port })), name: sentinel.masterName };
}

/**
 * A connection that remembers the connections duplicated from it, so that they can be dropped
 * together and for good. BullMQ's Worker duplicates the connection it is given for its blocking
 * reads and reconnects that duplicate itself (after a blocking read it gave up on, even one it
 * started waiting for before the drop): a dropped connection refuses to connect again, or such a
 * reconnect would leave a connection open past the agent's exit.
 */
export class ConnectionFamily extends Redis {
  private readonly duplicates = new Set<ConnectionFamily>();
  private dropped = false;

  /** A copy of this connection (ioredis' own `duplicate`), dropped with it. */
  override duplicate(override?: Partial<RedisOptions>): ConnectionFamily {
    const copy = new ConnectionFamily({ ...this.options, ...override });
    if (this.dropped) copy.dropAll();
    this.duplicates.add(copy);
    return copy;
  }

  /**
   * ioredis' disconnect, except that a connection between two reconnect attempts (no socket)
   * ends too: ioredis only cancels its next attempt, leaving it `reconnecting` for good with its
   * queued commands pending and no `end` event (BullMQ #4585), so a close waiting for that event
   * (BullMQ's, of its blocking connection) or for those commands (BullMQ's watchdog on its blocking
   * read, up to a drain delay) would hold the agent's exit. One in `wait` ends properly, rejecting them.
   */
  override disconnect(reconnect = false): void {
    if (!reconnect && this.status === 'reconnecting') this.status = 'wait';
    super.disconnect(reconnect);
    if (!reconnect && this.status === 'end') rejectParkedCommands(this);
  }

  override connect(callback?: Parameters<Redis['connect']>[0]): Promise<void> {
    if (this.dropped) return Promise.reject(new ConnectionDroppedError());
    return super.connect(callback);
  }

  /**
   * Whether this connection and every duplicate is connected or closed for good. One between two
   * reconnect attempts has no socket, and disconnecting it never emits the `end` that BullMQ's
   * graceful close waits for (its blocking connection's `disconnect(true)`).
   */
  everyConnectionSettled(): boolean {
    const settled = (c: Redis): boolean => c.status === 'ready' || c.status === 'end';
    return settled(this) && [...this.duplicates].every(settled);
  }

  /** Drops this connection and every duplicate at once: their waiting commands fail, none connects again. */
  dropAll(): void {
    this.dropped = true;
    this.disconnect();
    for (const copy of this.duplicates) copy.dropAll();
  }
}

/** ioredis' private queue of the commands that were waiting for a reply when the connection was lost. */
interface ParkedCommands {
  prevCommandQueue?: { shift(): { readonly command: { reject(err: Error): void } } | undefined } | null;
}

/**
 * Rejects the commands ioredis keeps to send again after a reconnect (those waiting for a reply
 * when the connection was lost, BullMQ's blocking read among them). A connection ended between
 * reconnect attempts never reconnects, and ioredis never settles them: BullMQ's watchdog on its
 * blocking read would hold the process for up to a drain delay.
 */
function rejectParkedCommands(connection: Redis): void {
  const parked = (connection as unknown as ParkedCommands).prevCommandQueue;
  if (parked === undefined || parked === null) return;
  // ioredis' own words for a closed connection, which BullMQ takes for a connection error (not reported).
  for (let item = parked.shift(); item !== undefined; item = parked.shift()) item.command.reject(new Error('Connection is closed.'));
}

/** A dropped {@link ConnectionFamily} was asked to connect again. */
export class ConnectionDroppedError extends Error {
  constructor() {
    super('the Redis connection was dropped at shutdown and does not connect again');
    this.name = 'ConnectionDroppedError';
  }
}

/**
 * A connection of `role` to the URL's Redis, or to the master the sentinels name. In Sentinel mode
 * the URL's host is ignored; its user, password and `/<db>` still apply.
 */
export function connectRedis(redisUrl: string, role: ConnectionRole, sentinel?: SentinelSettings): ConnectionFamily {
  const options = connectionOptions(role, sentinel);
  if (sentinel === undefined) return new ConnectionFamily(redisUrl, options);
  const url = new URL(redisUrl);
  const db = Number.parseInt(url.pathname.slice(1), 10);
  return new ConnectionFamily({ ...options, ...urlCredentials(url), ...(Number.isInteger(db) ? { db } : {}) });
}

/** The user and password a Redis URL carries, if any, decoded. */
export function urlCredentials(url: URL): { readonly username?: string; readonly password?: string } {
  return {
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
  };
}

/**
 * The queue's one command connection, shared by its BullMQ Queue (adds, counts, the sentinel key,
 * the resync's check) and Worker (taking and finishing jobs, locks, the stalled check); BullMQ
 * duplicates it for the Worker's blocking reads, named after the worker. A Worker's commands must
 * outlive a reconnect (`maxRetriesPerRequest: null`, or a job finished during an outage is left
 * active until its lock expires); the queue's own commands fail fast through {@link FailFast}.
 */
export const QUEUE_ROLE: ConnectionRole = { connectionName: 'nodelet-queue', maxRetriesPerRequest: null };

/** What {@link FailFast} watches of a connection (an ioredis client). */
export interface WatchedConnection {
  /** ioredis' connection status (`ready`, `reconnecting`, `end`, …). */
  readonly status: string;
  on(event: 'ready' | 'close', listener: () => void): unknown;
}

/**
 * Fail-fast for the queue's own commands on the connection it shares with BullMQ's Worker, which
 * waits for Redis to come back. A producer must not wait: an enqueue during an outage fails at
 * once (the resync after the reconnect repairs it) and the health sample sees the outage. So
 * while the connection is down, {@link FailFast.run} refuses without sending anything, and a
 * command still waiting for its reply when the connection goes down is rejected then; ioredis may
 * still send it again after the reconnect, which every such command tolerates (an add coalesces,
 * a sentinel refresh or a read is harmless). Before the first `ready` commands wait, as ioredis'
 * offline queue makes them: the agent sends none before its queue started.
 */
export class FailFast {
  private everReady = false;
  private session: { readonly lost: Promise<never>; readonly reject: (err: Error) => void } | undefined;

  constructor(private readonly redis: WatchedConnection) {
    redis.on('ready', () => {
      this.everReady = true;
      let reject: (err: Error) => void = () => undefined;
      const lost = new Promise<never>((_resolve, fail) => {
        reject = fail;
      });
      lost.catch(() => undefined); // rejected with no command waiting: nothing to report
      this.session = { lost, reject };
    });
    redis.on('close', () => {
      this.session?.reject(new RedisUnavailableError('the connection to Redis closed while a command waited for its reply'));
      this.session = undefined;
    });
  }

  /** Runs `command` while the connection is up; rejects with a {@link RedisUnavailableError} otherwise. */
  run<T>(command: () => Promise<T>): Promise<T> {
    if (!this.everReady) return command();
    if (this.session === undefined) return Promise.reject(new RedisUnavailableError(`Redis is unreachable (connection ${this.redis.status})`));
    return Promise.race([command(), this.session.lost]);
  }
}

/**
 * Parses `HOST:PORT,HOST:PORT,...` (IPv6 as `[ADDR]:PORT`); empty text is no sentinels.
 * @throws RangeError naming the bad entry.
 */
export function parseSentinelAddresses(text: string): SentinelAddress[] {
  return parseRedisAddresses(text, 'a sentinel');
}

/**
 * Parses `HOST:PORT,HOST:PORT,...` (IPv6 as `[ADDR]:PORT`); empty text is an empty list.
 * @throws RangeError naming the bad entry (`what` says what an entry is, e.g. "a sentinel").
 */
export function parseRedisAddresses(text: string, what: string): RedisAddress[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(entry);
      const port = Number(match?.[3]);
      if (match === null || port < 1 || port > 65535) throw new RangeError(`${what} must be HOST:PORT, got "${entry}"`);
      return { host: match[1] ?? match[2] ?? '', port };
    });
}

/** Logs a connection's errors: the first of an outage as a warning, the rest at debug. */
export function logConnectionErrors(redis: RedisClient, logger: Logger, role: string): void {
  let down = false;
  redis.on('error', (err: unknown) => {
    if (down) {
      logger.debug({ err, role }, 'redis connection error');
      return;
    }
    down = true;
    logger.warn({ err, role }, 'redis connection error; reconnecting');
  });
  redis.on('ready', () => {
    if (down) logger.info({ role }, 'redis connection ready again');
    down = false;
  });
}

/** A sentinel key kept alive by one queue instance, its commands failing fast; see `state-watch.ts`. */
export function redisSentinel(redis: RedisClient, failFast: FailFast, sentinel: { readonly key: string; readonly ttlMs: number }): SentinelStore {
  const { key, ttlMs } = sentinel;
  return {
    isReady: () => redis.status === 'ready',
    onReady: (listener) => {
      redis.on('ready', listener);
      return () => {
        redis.off('ready', listener);
      };
    },
    create: async () => {
      await failFast.run(() => redis.set(key, '1', 'PX', ttlMs));
    },
    refresh: async () => (await failFast.run(() => redis.set(key, '1', 'PX', ttlMs, 'XX'))) !== null,
    remove: async () => {
      await failFast.run(() => redis.del(key));
    },
  };
}

/**
 * Which of the given UIDs' deduplication keys (`queue.toKey('de:' + uid)`) exist, in order: in
 * BullMQ 6.7.0 a UID's key is set by the add that creates its job and deleted when that job
 * completes or fails (`removeDeduplicationKeyIfNeededOnFinalization.lua`), so it exists exactly
 * while the UID has a job waiting, delayed or active. One MGET, whatever the number of UIDs (a
 * stale key, whose job was removed by hand, reads as a job: the caller then enqueues, and BullMQ's
 * add recovers the stale key). The integration test covers this reading of BullMQ's keys.
 */
export async function heldDeduplicationKeys(redis: RedisClient, keys: readonly string[]): Promise<boolean[]> {
  if (keys.length === 0) return [];
  const values = await redis.mget(...keys);
  return values.map((value) => value !== null);
}

// KEYS[1] the queue's delayed zset, KEYS[2] BullMQ's "dedup-next" hash of the UID; ARGV[1] job id.
const DROP_PENDING_NEXT = `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DEL', KEYS[2])
  return 1
end
return 0`;

/** The keys {@link dropPendingNextIfDelayed} touches, from the queue's `toKey`. */
export interface PendingNextKeys {
  /** The queue's delayed zset (`queue.toKey('delayed')`). */
  readonly delayed: string;
  /** BullMQ's dedup-next hash for the UID (`queue.toKey('dn:' + uid)`). */
  readonly dedupNext: string;
}

/**
 * After a job moved itself to delayed: if an event arrived while it ran (BullMQ stored it as the
 * UID's "dedup-next" payload, to become a job when this one *finishes*), discard that payload and
 * return true, so the caller promotes this job instead. Atomic with the check that the job is
 * still delayed: once the payload is gone the job's next run starts after that event, whether the
 * caller's promote or the timer starts it. This reads BullMQ internals (`dn:<dedup id>`, see
 * `storeDeduplicatedNextJob.lua` in bullmq 6.7.0); the integration test covers it.
 */
export async function dropPendingNextIfDelayed(redis: RedisClient, keys: PendingNextKeys, jobId: string): Promise<boolean> {
  const dropped = await redis.eval(DROP_PENDING_NEXT, 2, keys.delayed, keys.dedupNext, jobId);
  return dropped === 1;
}

/**
 * Sentinel settings from the flags' text: undefined without sentinels; the master name is then
 * required. @throws RangeError on a bad address or a missing master name.
 */
export function sentinelSettings(sentinels: string, masterName: string): SentinelSettings | undefined {
  const addresses = parseSentinelAddresses(sentinels);
  if (addresses.length === 0) return undefined;
  if (masterName.trim() === '') throw new RangeError('sentinels need the master name');
  return { sentinels: addresses, masterName: masterName.trim() };
}
