/**
 * Redis-facing pieces of the reconcile queue: connections, job identity and options, the queue
 * sentinel, and the one script that touches a BullMQ key directly.
 */
import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { JobsOptions, KeepJobs } from 'bullmq';
import type { Logger } from 'pino';
import type { PodKey } from '../../util/pod-key.js';
import type { SentinelStore } from './state-watch.js';

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

/** One Redis Sentinel to ask for the current master. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

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

  override connect(callback?: Parameters<Redis['connect']>[0]): Promise<void> {
    if (this.dropped) return Promise.reject(new ConnectionDroppedError());
    return super.connect(callback);
  }

  /** Drops this connection and every duplicate at once: their waiting commands fail, none connects again. */
  dropAll(): void {
    this.dropped = true;
    this.disconnect();
    for (const copy of this.duplicates) copy.dropAll();
  }
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
  return new ConnectionFamily({
    ...options,
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
    ...(Number.isInteger(db) ? { db } : {}),
  });
}

/**
 * The producer side (adds, counts, the sentinel key): commands fail after a few reconnect
 * attempts instead of queueing forever, so `enqueue` reports an outage promptly (the resync after
 * the reconnect repairs what was lost).
 */
export const PRODUCER_ROLE: ConnectionRole = { connectionName: 'nodelet-queue', maxRetriesPerRequest: 3 };

/** A BullMQ Worker, which requires `maxRetriesPerRequest: null`. */
export const WORKER_ROLE: ConnectionRole = { connectionName: 'nodelet-worker', maxRetriesPerRequest: null };

/** A connection for the producer side; see {@link PRODUCER_ROLE}. */
export function producerConnection(redisUrl: string, sentinel?: SentinelSettings): ConnectionFamily {
  return connectRedis(redisUrl, PRODUCER_ROLE, sentinel);
}

/** A connection for a BullMQ Worker; see {@link WORKER_ROLE}. */
export function workerConnection(redisUrl: string, sentinel?: SentinelSettings): ConnectionFamily {
  return connectRedis(redisUrl, WORKER_ROLE, sentinel);
}

/**
 * Parses `HOST:PORT,HOST:PORT,...` (IPv6 as `[ADDR]:PORT`); empty text is no sentinels.
 * @throws RangeError naming the bad entry.
 */
export function parseSentinelAddresses(text: string): SentinelAddress[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(entry);
      const port = Number(match?.[3]);
      if (match === null || port < 1 || port > 65535) throw new RangeError(`a sentinel must be HOST:PORT, got "${entry}"`);
      return { host: match[1] ?? match[2] ?? '', port };
    });
}

/** Logs a connection's errors: the first of an outage as a warning, the rest at debug. */
export function logConnectionErrors(redis: Redis, logger: Logger, role: string): void {
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

/** A sentinel key kept alive by one queue instance; see `state-watch.ts`. */
export function redisSentinel(redis: Redis, key: string, ttlMs: number): SentinelStore {
  return {
    isReady: () => redis.status === 'ready',
    onReady: (listener) => {
      redis.on('ready', listener);
      return () => {
        redis.off('ready', listener);
      };
    },
    create: async () => {
      await redis.set(key, '1', 'PX', ttlMs);
    },
    refresh: async () => (await redis.set(key, '1', 'PX', ttlMs, 'XX')) !== null,
    remove: async () => {
      await redis.del(key);
    },
  };
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
export async function dropPendingNextIfDelayed(redis: Redis, keys: PendingNextKeys, jobId: string): Promise<boolean> {
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
