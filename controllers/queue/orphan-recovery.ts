/**
 * Early recovery of reconcile jobs orphaned by a dead agent process.
 *
 * A job whose worker died stays "active" until its lock expires and a stalled check of a live
 * worker moves it back to waiting: up to `lockDurationMs + stalledIntervalMs` (25 s by default).
 * Meanwhile the UID's deduplication key is held by the orphan, so every event of that pod waits.
 * The kubelet has no such gap: its pod workers die with it and a restarted kubelet syncs every
 * pod at once. To match it, a starting queue instance looks for orphans whose worker is provably
 * gone and moves them back to waiting at once.
 *
 * "Provably gone": every worker is named (`processedBy` on the jobs it takes) and its blocking
 * connection carries that name in Redis' `CLIENT LIST` (BullMQ 6.7.0, `utils/create-backend.js`).
 * A process that exits, however it dies, closes its sockets, so its name leaves the list at once.
 * A worker that is alive but cut off from Redis keeps its connection listed until Redis notices,
 * and a host that vanished keeps it until TCP keepalive: both leave the job to the lock expiry, as
 * before. A job of an unnamed worker (an older agent) is left alone too.
 *
 * The move is BullMQ's own `moveJobFromActiveToWait` script. Before it, a small script takes the
 * job's lock for this instance, atomically with the checks that the job is still active and was
 * last taken by the dead worker (a worker that takes a job sets its own name on it), whether the
 * dead worker's lock has expired yet or not; BullMQ's script then moves the job only while that
 * lock is ours. So a job that a live worker took in between is never touched. (`processedBy` is
 * set only by named workers: were an unnamed worker of an older nodelet running beside this one,
 * a job it took after a named one would look orphaned. Every nodelet since this file names its
 * workers.)
 *
 * Poison jobs: BullMQ fails a job found stalled more than `maxStalledCount` times, so a pod that
 * kills the agent every time cannot loop forever. An early recovery does not count as a stall, so
 * the claiming script counts it (a Redis counter per job ID that expires after a day) and claims
 * at most `maxStalledCount` times per job; after that the job takes BullMQ's counted stalled path.
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import type { Logger } from 'pino';
import { parseClientList } from './client-list.js';
import type { ReconcileJobData, RedisClient } from './redis.js';
import type { RunRecord } from './runner.js';

/** What the decision needs of one active job. */
export interface ActiveJobView {
  /** Optional as in BullMQ's `Job`; a job without one is never an orphan. */
  readonly id?: string;
  /** The name of the worker that took it (BullMQ's `processedBy`); undefined for an unnamed worker. */
  readonly processedBy?: string;
}

/** An active job whose named worker is gone. */
export interface Orphan<J> {
  readonly job: J;
  readonly id: string;
  /** The dead worker's name. */
  readonly deadWorker: string;
}

/**
 * The active jobs taken by a named worker that is neither `self` nor connected.
 * `liveWorkers` undefined means the connected workers are unknown: nothing is an orphan.
 */
export function orphanedJobs<J extends ActiveJobView>(active: readonly J[], liveWorkers: ReadonlySet<string> | undefined, self: string): Orphan<J>[] {
  if (liveWorkers === undefined) return [];
  return active.flatMap((job) => {
    const holder = job.processedBy;
    if (job.id === undefined || holder === undefined || holder === '' || holder === self || liveWorkers.has(holder)) return [];
    return [{ job, id: job.id, deadWorker: holder }];
  });
}

/**
 * The clients connected to the queue's Redis, one record of `CLIENT LIST` fields each (`rawname`:
 * the client's name), as BullMQ's `getWorkers()` lists them; `[{ name }]` without `rawname` when the
 * Redis has no `CLIENT LIST` (as BullMQ answers then). Sent on the queue's command connection: on a
 * Redis Cluster that connection sends a command without a key to the queue's own shard, where the
 * queue's workers are connected (BullMQ's `getWorkers()` would ask every node of the cluster, and
 * leave the agent a connection open to each).
 */
export async function connectedClients(redis: RedisClient): Promise<Record<string, string>[]> {
  let list: unknown;
  try {
    list = await redis.client('LIST');
  } catch (err: unknown) {
    // A Redis without the command (e.g. GCP Memorystore) answers with an error reply: only its text tells.
    if (err instanceof Error && /^ERR unknown command/i.test(err.message)) return [{ name: 'CLIENT LIST is not supported' }];
    throw err;
  }
  return parseClientList(String(list)).map((fields) => ({ ...fields, rawname: fields.name ?? '' }));
}

/**
 * The worker names in a list of connected clients ({@link connectedClients}), whose `rawname` is
 * `<prefix>:<base64 queue name>:w:<worker name>` for a named worker and without `:w:…` for an
 * unnamed one. Undefined when an entry has no `rawname` (a Redis without `CLIENT LIST`, where
 * BullMQ answers with a placeholder): then nobody can be shown dead.
 */
export function liveWorkerNames(clients: readonly Readonly<Record<string, string | undefined>>[], namedPrefix: string): Set<string> | undefined {
  const names = new Set<string>();
  for (const client of clients) {
    const raw = client.rawname;
    if (raw === undefined) return undefined;
    if (raw.startsWith(namedPrefix)) names.add(raw.slice(namedPrefix.length));
  }
  return names;
}

/** The Redis client name of a queue's unnamed workers, and the start of its named workers' (BullMQ's `clientName()`). */
export function queueClientName(keyPrefix: string, queueName: string): string {
  return `${keyPrefix}:${Buffer.from(queueName).toString('base64')}`;
}

/** The Redis client-name prefix of the named workers of a queue (see {@link liveWorkerNames}). */
export function namedWorkerPrefix(keyPrefix: string, queueName: string): string {
  return `${queueClientName(keyPrefix, queueName)}:w:`;
}

/** What {@link recoverOrphanedJobs} works with. */
export interface OrphanRecoveryDeps {
  readonly queue: Queue<ReconcileJobData, RunRecord>;
  /** A plain command connection (not a blocking one). */
  readonly redis: RedisClient;
  /** The key prefix the queue was created with. */
  readonly keyPrefix: string;
  /** This instance's worker name, never an orphan's. */
  readonly self: string;
  /** Early recoveries allowed per job ID (BullMQ's `maxStalledCount`). */
  readonly maxRecoveries: number;
  /** How long the lock taken to move an orphan lives if the move never happens (the worker's lock duration). */
  readonly claimTtlMs: number;
  readonly logger: Logger;
}

/** A day: long past any job's life in the active list, short enough to never accumulate. */
const RECOVERY_COUNT_TTL_MS = 24 * 3600 * 1000;

/**
 * Moves the active jobs of dead named workers back to waiting; returns the IDs moved. A job that
 * cannot be moved (a live worker took it since the listing, it finished) is left to BullMQ.
 */
export async function recoverOrphanedJobs(deps: OrphanRecoveryDeps): Promise<string[]> {
  const active = await deps.queue.getActive();
  // Only a job another named worker holds can be an orphan. Without one, the client listing (one
  // line per connection to the server: on a shared Redis, every agent's) is not asked for: a
  // fleet's agents starting together would otherwise cost Redis nodes² lines.
  if (orphanedJobs(active, new Set(), deps.self).length === 0) return [];
  const live = liveWorkerNames(await connectedClients(deps.redis), namedWorkerPrefix(deps.keyPrefix, deps.queue.name));
  if (live === undefined) return [];
  const recovered: string[] = [];
  for (const orphan of orphanedJobs(active, live, deps.self)) {
    if (await recoverOne(deps, orphan)) recovered.push(orphan.id);
  }
  return recovered;
}

async function recoverOne(deps: OrphanRecoveryDeps, orphan: Orphan<Job<ReconcileJobData, RunRecord>>): Promise<boolean> {
  const jobKey = deps.queue.toKey(orphan.id);
  const token = `nodelet-recovery:${randomUUID()}`;
  const keys = [jobKey, `${jobKey}:lock`, deps.queue.toKey('active'), `${jobKey}:nodelet-recovered`];
  const claim = Number(await deps.redis.eval(CLAIM_ORPHAN, keys.length, ...keys, orphan.id, orphan.deadWorker, token, deps.claimTtlMs, deps.maxRecoveries, RECOVERY_COUNT_TTL_MS));
  if (claim === 0) return false; // finished, or taken by a live worker since the listing
  if (claim < 0) {
    deps.logger.warn({ jobId: orphan.id, recoveries: -claim - 1 }, 'reconcile job orphaned again; leaving it to the stalled check, which fails a job that keeps killing agents');
    return false;
  }
  try {
    await orphan.job.moveToWait(token);
  } catch (err: unknown) {
    // Our claim expires after claimTtlMs and BullMQ's stalled check takes the job then.
    deps.logger.warn({ err, jobId: orphan.id }, 'moving an orphaned reconcile job back to waiting failed');
    return false;
  }
  deps.logger.info({ jobId: orphan.id, deadWorker: orphan.deadWorker }, 'reconcile job orphaned by a dead agent; running it again now');
  return true;
}

// KEYS[1] the job hash, KEYS[2] its lock, KEYS[3] the queue's active list, KEYS[4] its count of
// early recoveries; ARGV[1] job id, ARGV[2] the dead worker's name, ARGV[3] our token, ARGV[4] its
// lifetime in ms, ARGV[5] the most early recoveries, ARGV[6] the count's lifetime in ms.
// Only while the job is still active and last taken by that worker (a live worker that took it
// since has set its own name): counts the recovery and, within the cap, takes the job's lock for
// us, whatever token the dead worker left (expired or not). Returns the count, negated when over
// the cap; 0 for a job that is not that worker's orphan (nothing counted).
const CLAIM_ORPHAN = `
if redis.call('HGET', KEYS[1], 'pb') ~= ARGV[2] then return 0 end
if not redis.call('LPOS', KEYS[3], ARGV[1]) then return 0 end
local count = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[6])
if count > tonumber(ARGV[5]) then return -count end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return count`;
