/**
 * The reconcile queue: turns "something about pod UID X may have changed" into reconciles of X.
 * One BullMQ queue per node (`nodelet-reconcile-<node>`, key prefix `nodelet` by default); a job
 * carries only `{ uid, namespace, name, reason }`, never the pod: the handler reads the newest
 * state itself (level-triggered).
 *
 * Guarantees (the analogue of client-go's workqueue `doc.go`):
 *
 * - **Stingy per UID.** At most one reconcile of a UID runs at any moment, across every worker of
 *   every process sharing the node's queue. Different UIDs run in parallel up to the concurrency
 *   (`setConcurrency` changes it at runtime). Mechanism: BullMQ deduplication with the UID as
 *   deduplication ID and `keepLastIfActive`: the UID's deduplication key points at its one live
 *   job (waiting, delayed or active) until that job finishes, so no second job of the UID exists.
 *   The exception is the periodic resync's run of a UID that has no job (below): it is exclusive
 *   with the runs of its own process only.
 * - **Bursts coalesce; the latest state wins.** While the UID has a job waiting, an enqueue adds
 *   nothing (the waiting job has not read the state yet). While its job is active, enqueues are
 *   remembered once (BullMQ's "dedup-next" payload, latest wins) and become one new job the
 *   moment the active one finishes, so a reconcile always starts after the newest event.
 * - **A new event never waits behind a delay.** If the UID's pending job is delayed (a backoff
 *   retry or a requeue-after), an enqueue makes it due now in the same Redis script
 *   (`reschedule: true`; the same job, so its run log continues). If the event arrived while the
 *   job was running and the run then asks for a delay, the job runs again at once instead (see
 *   `runAgainLater` in `runner.ts`). So the earliest wake-up wins; and a requeue-after never
 *   postpones a pending event, because the pending event is what runs. The exception is
 *   `enqueueIfIdle` (the pod's status-only updates): it adds a job only when the UID has none, so
 *   the echo of a failing run's own status write cannot turn its backoff into a hot loop.
 *   Job IDs are `<uid>.<unique suffix>`, not the bare UID: finished jobs stay in the history and
 *   BullMQ ignores an add whose ID exists, so an ID per enqueue is needed; the deduplication ID
 *   is the bare UID.
 * - **Outcomes** (all policy in `planNextRun`, `policy.ts`):
 *   `{}` → completed, backoff forgotten; `{ requeueAfterMs }` → backoff forgotten, the job moves
 *   to delayed and runs again after that delay; a thrown error → the UID's failure count grows and
 *   the job runs again after `base · 2^(failures−1)` (1 s doubling, capped at 5 min by default);
 *   a thrown `TerminalReconcileError` (`util/reconcile.ts`) → the job fails, no retry (a later event starts over).
 *   A requeued or retried job stays the same BullMQ job: moving it from active to delayed keeps
 *   the UID's deduplication key, so nothing can slip in between. Failure counts live in memory
 *   per queue instance, like client-go's rate limiter: an agent restart forgets them.
 * - **Preemption.** `preempt(uid)` aborts the signal of the UID's run in flight in this process
 *   (`preemption.ts`): for an event that makes the run's work moot, as the kubelet's pod worker
 *   cancels a sync when its pod starts terminating. The run ends `preempted`: not a failure, the
 *   job runs again at once.
 * - **Agent restarts.** A job whose worker died stays "active" with an expiring lock. A starting
 *   instance moves back to waiting, at once, the active jobs of named workers whose Redis
 *   connection is gone (`orphan-recovery.ts`): a restarted agent resumes its pods' reconciles
 *   immediately, as a restarted kubelet does. Otherwise (a worker cut off but maybe alive, a host
 *   gone without closing its sockets) BullMQ's stalled check of any live worker moves the job back
 *   to waiting once its lock expires, still holding the UID's deduplication key, so it runs again,
 *   alone, within `lockDurationMs + stalledIntervalMs` (15 s + 10 s by default). A job found
 *   stalled more than `maxStalledCount` times (it keeps killing the agent) fails; the next event
 *   or resync starts it over. The stalled check cannot tell a dead agent from one frozen longer
 *   than the lock: when a run loses its lock while alive (a frozen event loop, Redis unreachable
 *   for a lock period), its `signal` is aborted and it should stop.
 * - **Periodic resync** (`resync`, `resync.ts`): every pod reconciled at least once per period,
 *   as the kubelet's pod workers do in memory. A UID with a job is enqueued; one without is
 *   reconciled in this process without a job, at one Redis command per resync for all of them,
 *   and handed to the queue when that run does not simply succeed. The concurrency bounds the
 *   jobs' runs and these together (`run-slots.ts`).
 * - **Losing Redis.** Redis holds only queue state. Connections reconnect forever (ioredis retry);
 *   `enqueue`, `resync` and the counts reject during an outage instead of hanging (`FailFast`). When the queue may have lost jobs (a
 *   reconnect, or a flush noticed through a sentinel key), `onResync` listeners are called: the
 *   agent must then re-enqueue every pod it knows (informer store and runtime), which is always
 *   safe because enqueues coalesce. While those listeners run, `resync` enqueues every UID. A
 *   failed enqueue or resync look-up fires them too, once Redis answers again after a short
 *   backoff (`requests-failed`): the event it carried was dropped by its caller.
 * - **Connections and idle cost.** One command connection (`nodelet-queue`) shared by the BullMQ
 *   Queue and Worker, plus the Worker's blocking duplicate named after the worker: 2 per instance,
 *   on a Redis Cluster too, both to the queue's shard (`ClusterFamily`'s home).
 *   With no pod changing, Redis hears the health sample's sentinel refresh (`sampleCounts`), the
 *   counts at most once a minute, the resync's one look-up per period, the Worker's blocking wait
 *   every `drainDelaySeconds` and its stalled check every `stalledIntervalMs` (docs/redis.md).
 * - **History.** Finished jobs are kept for a dashboard (default: the last 1000 completed and 1000
 *   failed, at most an hour old). Each run appends a JSON {@link RunRecord} (run number, reason,
 *   attempt, outcome, start, duration, next run, error) to the job's log; a completed job's return
 *   value is its last run's record; a failed job's `failedReason` names the terminal error.
 *
 * Use (the agent):
 * ```ts
 * const queue = createReconcileQueue({ redisUrl, nodeName, concurrency: 4, logger });
 * queue.onResync(() => enqueueEveryKnownPod(queue));   // store + runtime, reason 'resync'
 * await queue.start(podReconciler);   // a Reconciler (`util/reconcile.ts`)
 * every(resyncPeriod, () => { for (const pod of known) void queue.resync(pod, 'resync').catch(log) });
 * // the pod event dispatcher (`controllers/pod-events/`) decides which events enqueue
 * queue.enqueue({ uid, namespace, name }, 'pod updated').catch((err: unknown) => log.warn({ err }));
 * ```
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Queue, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { DEFAULT_RECONCILE_BACKOFF, FailureCounter } from './policy.js';
import type { BackoffPolicy } from '../../util/backoff.js';
import {
  DEFAULT_HISTORY,
  FailFast,
  RECONCILE_JOB_NAME,
  dropPendingNextIfDelayed,
  enqueueOptions,
  heldDeduplicationKeys,
  idleEnqueueOptions,
  jobDataOf,
  QUEUE_ROLE,
  logConnectionErrors,
  newJobId,
  nodeQueueKeyspace,
  redisSentinel,
} from './redis.js';
import type { JobHistory, RedisClient, ReconcileJobData, SentinelSettings } from './redis.js';
import { connectTopology, type ClusterSettings, type DroppableConnection } from './redis-cluster.js';
import { InFlightRuns, TerminalRunFailure, createRunner, type ReconcileRunMetrics } from './runner.js';
import { ResyncBatcher } from './resync.js';
import { RunSlots } from './run-slots.js';
import { RunPreemption } from './preemption.js';
import { recoverOrphanedJobs } from './orphan-recovery.js';
import type { RunRecord } from './runner.js';
import { ResyncWatcher } from './state-watch.js';
import type { ResyncListener } from './state-watch.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { settlesWithin } from '../../util/timeout.js';
import { ReconcileQueueStateError } from './errors.js';
import type { PodKey } from '../../util/pod-key.js';
import type { Reconciler } from '../../util/reconcile.js';

export type { ResyncCause, ResyncListener } from './state-watch.js';
export type { RunRecord, RunMetric, ReconcileRunMetrics } from './runner.js';

/** Job counts of the node's queue. */
export interface QueueCounts {
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly failed: number;
  readonly completed: number;
}

/** The node's reconcile queue; semantics in this file's header. */
export interface ReconcileQueue {
  /** Asks for a reconcile of `ref.uid`; coalesces with whatever is pending. Rejects while Redis is unreachable. */
  enqueue(ref: PodKey, reason: string): Promise<void>;
  /**
   * Like `enqueue`, but only when the UID has no job in any state: a waiting, delayed (backoff,
   * requeue-after) or running job already covers the event, and is neither made due now nor
   * followed by another run. For events that must not cut a delay short (status-only updates).
   */
  enqueueIfIdle(ref: PodKey, reason: string): Promise<void>;
  /**
   * Asks for a reconcile of `ref` at least once from now, cheaply (the periodic resync, see
   * `resync.ts`): like `enqueue` for a UID that has a job; a UID without one is reconciled in this
   * process without a job (one Redis command for every request of the same turn of the event
   * loop), and handed to the queue if that run does not simply succeed. Before `start()`, and
   * while the queue's own `onResync` listeners run (Redis may have lost jobs), it is `enqueue`.
   * Rejects while Redis is unreachable.
   */
  resync(ref: PodKey, reason: string): Promise<void>;
  /**
   * Cancels the run of `uid` in flight in this process, if any, for an event that makes its work
   * moot (the pod started terminating, or is gone), as the kubelet's pod worker cancels a sync in
   * progress. The run's signal aborts (reason: a `RunPreemptedError`); the job then runs again at
   * once, with the newest state, its failure count untouched. Returns whether a run was cancelled.
   */
  preempt(uid: string, why: string): boolean;
  /** Whether this process runs a reconcile of `uid` now (housekeeping leaves such a UID to its run). */
  runInFlight(uid: string): boolean;
  /** Starts this instance's workers, calling `reconciler` for each job; resolves once Redis is reachable. Call once. */
  start(reconciler: Reconciler): Promise<void>;
  /** Changes how many different UIDs this instance reconciles at once (an integer ≥ 1). */
  setConcurrency(n: number): void;
  /** Job counts of the queue (all instances), read from Redis. */
  counts(): Promise<QueueCounts>;
  /**
   * Job counts for a health sample or a metrics scrape, cheaply: proves that Redis answers with one
   * command (the sentinel's refresh, see `state-watch.ts`), and reads the counts again only when
   * this instance enqueued, ran or finished a job since the last read, or that read is older than
   * `countsMaxAgeMs` (another process's changes show within that age). Rejects while Redis is
   * unreachable.
   */
  sampleCounts(): Promise<QueueCounts>;
  /** Forgets the UID's failure count in this instance (the pod is gone: its backoff must not outlive it). */
  forgetFailures(uid: string): void;
  /** Calls `listener` whenever jobs may have been lost (Redis reconnected or flushed). Returns an unsubscribe function. */
  onResync(listener: ResyncListener): () => void;
  /**
   * Stops: lets active reconciles finish for up to `shutdownTimeoutMs`, then aborts their signals
   * and leaves their jobs to stalled recovery by the next agent; closes every connection. A Redis
   * that stops answering holds no step longer than `redisStepTimeoutMs`: its connections are then
   * dropped, as after a forced stop.
   */
  close(): Promise<void>;
}

/** Lock and stalled-check settings of the workers (see "Agent restarts" in this file's header). */
export interface StallSettings {
  /** A running job's lock lifetime; renewed every half of it. Default 15000. */
  readonly lockDurationMs?: number;
  /** How often workers look for jobs whose lock expired. Default 10000. */
  readonly stalledIntervalMs?: number;
  /** Times a job may be found stalled before it fails. Default 3. */
  readonly maxStalledCount?: number;
}

/** Options of {@link createReconcileQueue}. */
export interface ReconcileQueueOptions {
  /** e.g. `redis://127.0.0.1:16379` (a `/<db>` suffix selects the database). */
  readonly redisUrl: string;
  /** Reach the master through these sentinels instead of the URL's host (see `connectRedis`). */
  readonly sentinel?: SentinelSettings;
  /**
   * Redis is a cluster found through these nodes (the URL gives only credentials): the queue's keys
   * then carry the node's hash tag, so the queue lives on one shard (`nodeQueueKeyspace`).
   */
  readonly cluster?: ClusterSettings;
  readonly nodeName: string;
  /** Initial number of UIDs reconciled at once by this instance. */
  readonly concurrency: number;
  readonly logger: Logger;
  /** Redis key prefix. Default `nodelet` (`{nodelet:<node>}` on a cluster). */
  readonly prefix?: string;
  /** Per-UID failure backoff (`initialMs`, `maxMs`). Default 1 s doubling, at most 5 min. */
  readonly backoff?: Partial<BackoffPolicy>;
  /** Finished-job history kept for a dashboard. */
  readonly history?: Partial<JobHistory>;
  readonly stall?: StallSettings;
  /** How long `close()` waits for active reconciles. Default 30000. */
  readonly shutdownTimeoutMs?: number;
  /** How long `close()` waits for Redis to answer one step before dropping the connections. Default 5000. */
  readonly redisStepTimeoutMs?: number;
  /** How often to check that Redis still holds the queue (see `onResync`), unless `sampleCounts` checked since. Default 10000. */
  readonly stateCheckIntervalMs?: number;
  /**
   * How long the worker's blocking wait for a job lasts before it looks again (BullMQ's
   * `drainDelay`; each wait costs a BZPOPMIN and a look). A job added or due wakes the wait at
   * once through BullMQ's marker key, so a longer wait costs no latency. Default 30.
   */
  readonly drainDelaySeconds?: number;
  /** How old the counts `sampleCounts` returns may be when this instance saw no job change. Default 60000. */
  readonly countsMaxAgeMs?: number;
  /** Clock for run durations, the state check and the shutdown timeout. Default the system clock. */
  readonly clock?: Clock;
  /** Receives every finished run (duration, outcome, whether it is retried). */
  readonly metrics?: ReconcileRunMetrics;
}

/** Creates the node's reconcile queue; connects to Redis in the background. */
export function createReconcileQueue(options: ReconcileQueueOptions): ReconcileQueue {
  return new BullReconcileQueue(options);
}

const DEFAULT_STALL = { lockDurationMs: 15_000, stalledIntervalMs: 10_000, maxStalledCount: 3 } as const;

/** Counts read from Redis, and this instance's job activity when they were read. */
interface CountsRead {
  readonly counts: QueueCounts;
  readonly activity: number;
  readonly atMs: number;
}

class BullReconcileQueue implements ReconcileQueue {
  private readonly name: string;
  private readonly prefix: string;
  private readonly logger: Logger;
  private readonly history: JobHistory;
  /** The one command connection, shared by the Queue and the Worker (BullMQ duplicates it for blocking reads). */
  private readonly redis: DroppableConnection;
  private readonly failFast: FailFast;
  private readonly queue: Queue<ReconcileJobData, RunRecord>;
  private readonly watcher: ResyncWatcher;
  private readonly failures = new FailureCounter();
  private readonly inFlight = new InFlightRuns();
  private readonly preemption = new RunPreemption();
  /** The concurrency as one budget for the Worker's jobs and the resync's runs without a job. */
  private readonly slots: RunSlots;
  /** Aborts the job-less runs of the resync when the shutdown gives up waiting for them. */
  private readonly stopRuns = new AbortController();
  private readonly clock: Clock;
  private concurrency: number;
  private worker: Worker<ReconcileJobData, RunRecord> | undefined;
  private resyncs: ResyncBatcher | undefined;
  /** Bumped by every enqueue, run start and end, and finished job of this instance: the counts may have changed. */
  private activity = 0;
  private countsRead: CountsRead | undefined;
  /** Above 0 while the queue's own `onResync` listeners run: Redis may have lost jobs, so `resync` enqueues. */
  private stateSuspect = 0;
  /** The worker's forced close, once Redis was found not answering (see `dropConnections`). */
  private workerForcedClose: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** Set once a shutdown step found Redis not answering (logged once). */
  private redisSilent = false;
  /** This instance's worker name: host, process and a random part, unique per instance. */
  private readonly workerName = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(private readonly options: ReconcileQueueOptions) {
    const keyspace = nodeQueueKeyspace(options.nodeName, { prefix: options.prefix ?? 'nodelet', hashTagged: options.cluster !== undefined });
    this.name = keyspace.name;
    this.prefix = keyspace.prefix;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger.child({ component: 'reconcile-queue', queue: this.name });
    this.history = { ...DEFAULT_HISTORY, ...options.history };
    this.concurrency = validConcurrency(options.concurrency);
    this.slots = new RunSlots(this.concurrency);
    this.redis = connectTopology(options.redisUrl, QUEUE_ROLE, { ...(options.sentinel === undefined ? {} : { sentinel: options.sentinel }), ...(options.cluster === undefined ? {} : { cluster: options.cluster, home: this.prefix }) });
    this.failFast = new FailFast(this.redis);
    logConnectionErrors(this.redis, this.logger, 'queue');
    this.queue = new Queue<ReconcileJobData, RunRecord>(this.name, { connection: this.redis, prefix: this.prefix });
    this.queue.on('error', (err) => {
      // The queue re-emits its connection's errors, which logConnectionErrors already reports.
      this.logger.debug({ err }, 'queue error');
    });
    const intervalMs = options.stateCheckIntervalMs ?? 10_000;
    const sentinel = { key: this.queue.toKey(`nodelet-sentinel:${randomUUID()}`), ttlMs: Math.max(3 * intervalMs, 60_000) };
    this.watcher = new ResyncWatcher({ store: redisSentinel(this.redis, this.failFast, sentinel), intervalMs, logger: this.logger, clock: this.clock });
    this.watcher.start();
  }

  enqueue(ref: PodKey, reason: string): Promise<void> {
    return this.add(ref, reason, enqueueOptions);
  }

  enqueueIfIdle(ref: PodKey, reason: string): Promise<void> {
    return this.add(ref, reason, idleEnqueueOptions);
  }

  async resync(ref: PodKey, reason: string): Promise<void> {
    this.assertOpen('resync');
    if (this.resyncs === undefined || this.stateSuspect > 0) {
      await this.enqueue(ref, reason);
      return;
    }
    await this.resyncs.request(ref, reason);
  }

  /** Adds a job for the UID under a fresh job ID, with the deduplication `options` give. */
  private async add(ref: PodKey, reason: string, options: typeof enqueueOptions): Promise<void> {
    this.assertOpen('enqueue');
    if (ref.uid === '') throw new TypeError('enqueue: empty pod UID');
    const jobId = newJobId(ref.uid, this.clock.now());
    this.activity += 1;
    await this.askRedis(() => this.queue.add(RECONCILE_JOB_NAME, jobDataOf(ref, reason), options(ref.uid, jobId, this.history)));
  }

  /** A request that carries a pod's event to Redis: a failure has the watcher resync once Redis answers again. */
  private async askRedis<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await this.failFast.run(work);
      this.watcher.requestSucceeded();
      return result;
    } catch (err: unknown) {
      this.watcher.requestFailed();
      throw err;
    }
  }

  preempt(uid: string, why: string): boolean {
    return this.preemption.preempt(uid, why);
  }

  runInFlight(uid: string): boolean {
    return this.preemption.inFlight(uid);
  }

  async start(reconciler: Reconciler): Promise<void> {
    this.assertOpen('start');
    if (this.worker) throw new ReconcileQueueStateError('reconcile queue already started');
    const stall = { ...DEFAULT_STALL, ...this.options.stall };
    const runner = createRunner({
      reconciler,
      failures: this.failures,
      backoff: { ...DEFAULT_RECONCILE_BACKOFF, ...this.options.backoff },
      clock: this.clock,
      logger: this.logger,
      dropPendingNextIfDelayed: (job) => this.dropPendingNext(job),
      preemption: this.preemption,
      slots: this.slots,
      ...(this.options.metrics === undefined ? {} : { metrics: this.options.metrics }),
    });
    const tracked: typeof runner.processor = (job, token, signal) => {
      this.activity += 1;
      return this.inFlight.track(
        runner.processor(job, token, signal).finally(() => {
          this.activity += 1;
        }),
      );
    };
    const worker = new Worker<ReconcileJobData, RunRecord>(this.name, tracked, {
      // The queue's own connection: BullMQ uses it for the worker's commands and duplicates it for the blocking reads.
      connection: this.redis,
      prefix: this.prefix,
      concurrency: this.concurrency,
      lockDuration: stall.lockDurationMs,
      stalledInterval: stall.stalledIntervalMs,
      maxStalledCount: stall.maxStalledCount,
      drainDelay: this.options.drainDelaySeconds ?? 30,
      // After a connection error, try again in a second, not BullMQ's default 15 s.
      runRetryDelay: 1_000,
      // Named, so that its jobs carry the name and a later instance can tell they are orphaned.
      name: this.workerName,
    });
    this.worker = worker;
    this.resyncs = this.resyncBatcher((ref, reason) => this.inFlight.track(runner.runWithoutJob(ref, reason, this.stopRuns.signal)));
    this.watchWorker(worker);
    await worker.waitUntilReady();
    await this.recoverOrphans(stall.maxStalledCount, stall.lockDurationMs);
  }

  private resyncBatcher(runWithoutJob: ConstructorParameters<typeof ResyncBatcher>[0]['runWithoutJob']): ResyncBatcher {
    return new ResyncBatcher({
      jobsHeld: (uids) => this.askRedis(() => heldDeduplicationKeys(this.redis, uids.map((uid) => this.queue.toKey(`de:${uid}`)))),
      enqueue: (ref, reason) => this.enqueue(ref, reason),
      runWithoutJob,
      // Half the budget at most, so that events' jobs keep slots while a resync runs.
      parallelRuns: () => Math.max(1, Math.ceil(this.concurrency / 2)),
      open: () => this.closing === undefined,
      logger: this.logger,
    });
  }

  /** Runs again at once the jobs a dead agent process left active (see `orphan-recovery.ts`). */
  private async recoverOrphans(maxRecoveries: number, claimTtlMs: number): Promise<void> {
    try {
      const deps = { queue: this.queue, redis: this.redis, keyPrefix: this.prefix, self: this.workerName, maxRecoveries, claimTtlMs, logger: this.logger };
      const recovered = await recoverOrphanedJobs(deps);
      if (recovered.length > 0) this.logger.info({ jobs: recovered.length }, 'recovered the reconcile jobs of a dead agent');
    } catch (err: unknown) {
      // Only an early start is lost: BullMQ's stalled check recovers the orphans after the lock expires.
      this.logger.warn({ err }, 'looking for orphaned reconcile jobs failed; the stalled check will recover them');
    }
  }

  setConcurrency(n: number): void {
    this.concurrency = validConcurrency(n);
    this.slots.setCapacity(this.concurrency);
    if (this.worker) this.worker.concurrency = this.concurrency;
  }

  async sampleCounts(): Promise<QueueCounts> {
    await this.watcher.probe();
    const read = this.countsRead;
    const maxAgeMs = this.options.countsMaxAgeMs ?? 60_000;
    if (read?.activity === this.activity && this.clock.now() - read.atMs < maxAgeMs) return read.counts;
    const activity = this.activity;
    const atMs = this.clock.now();
    const counts = await this.counts();
    this.countsRead = { counts, activity, atMs };
    return counts;
  }

  async counts(): Promise<QueueCounts> {
    const c = await this.failFast.run(() => this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed'));
    return {
      waiting: c.waiting ?? 0,
      active: c.active ?? 0,
      delayed: c.delayed ?? 0,
      failed: c.failed ?? 0,
      completed: c.completed ?? 0,
    };
  }

  onResync(listener: ResyncListener): () => void {
    // The listener re-enqueues every pod (synchronously, as the agent's does): jobs may be lost, so
    // its `resync` requests enqueue instead of trusting Redis' deduplication keys.
    return this.watcher.onResync((cause) => {
      this.stateSuspect += 1;
      try {
        return listener(cause);
      } finally {
        this.stateSuspect -= 1;
      }
    });
  }

  forgetFailures(uid: string): void {
    this.failures.set(uid, 0);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /**
   * Each step that waits on Redis is bounded: a Redis that accepts connections but does not answer
   * (stopped, swapping, a partition that resets nothing) would otherwise hold the agent's exit for
   * as long as it lasts. Once a step runs out, every connection is dropped, which fails the
   * commands still waiting, and the remaining steps end at once; the next agent's stalled check
   * recovers any job left active.
   */
  private async shutdown(): Promise<void> {
    let answering = await this.redisAnswersWithin(this.watcher.stop());
    if (!answering) this.dropConnections();
    const forced = this.worker ? await this.stopWorker(this.worker) : false;
    answering &&= await this.redisAnswersWithin(
      this.queue.close().catch((err: unknown) => {
        this.logger.debug({ err }, 'closing the queue failed');
      }),
    );
    answering &&= !forced && (await this.redisAnswersWithin(quitOrDisconnect(this.redis)));
    if (!answering) this.redis.dropAll();
  }

  /** Whether `step` settled within the Redis step bound; logs once when Redis stopped answering. */
  private async redisAnswersWithin(step: Promise<unknown>): Promise<boolean> {
    const timeoutMs = this.options.redisStepTimeoutMs ?? 5_000;
    const settled = await settlesWithin(step, { clock: this.clock, timeoutMs });
    if (!settled && !this.redisSilent) {
      this.redisSilent = true;
      this.logger.warn({ timeoutMs }, 'Redis does not answer at shutdown: dropping its connections; the next agent recovers any job left active');
    }
    return settled;
  }

  /**
   * Drops every connection at once, BullMQ's blocking connection included: their waiting commands
   * fail instead of waiting for Redis. The worker is put into its (forced) close first, or its loop
   * would reconnect the blocking connection, and that connection would wait for Redis past the
   * agent's exit. Runs in flight go on; their jobs are left active for the next agent.
   */
  private dropConnections(): void {
    if (this.worker !== undefined) {
      this.workerForcedClose ??= this.worker.close(true).catch((err: unknown) => {
        this.logger.debug({ err }, 'closing the worker failed');
      });
    }
    this.redis.dropAll();
  }

  /**
   * Stops fetching, waits for this instance's runs up to the shutdown timeout, then closes the
   * worker; returns true when it had to force. A forced close stops renewing locks and drops the
   * connections without releasing the jobs, so the next agent's stalled check recovers them.
   */
  private async stopWorker(worker: Worker<ReconcileJobData, RunRecord>): Promise<boolean> {
    const timeoutMs = this.options.shutdownTimeoutMs ?? 30_000;
    const deadline = this.clock.now() + timeoutMs;
    // pause(true) only stops fetching; BullMQ's own waiting (pause(false), close(false)) keeps
    // renewing the locks of runs that never end, and pause(false) reconnects when they do.
    const paused = await this.redisAnswersWithin(
      worker.pause(true).catch((err: unknown) => {
        this.logger.debug({ err }, 'pausing the worker failed');
      }),
    );
    if (!paused) this.dropConnections();
    const drained = await settlesWithin(this.inFlight.idle(), { clock: this.clock, timeoutMs: deadline - this.clock.now() });
    // BullMQ's graceful close waits for its blocking connection to report its end, which one
    // between two reconnect attempts (Redis gone, credentials refused) never does: then force.
    const reconnecting = !this.redis.everyConnectionSettled();
    if (drained && !reconnecting) {
      const closed = await settlesWithin(worker.close(false), { clock: this.clock, timeoutMs: Math.max(deadline - this.clock.now(), 1_000) });
      if (closed) return false;
    }
    if (drained) this.logger.warn({ reconnecting }, 'Redis is unreachable at shutdown: closing the worker without waiting for it; the next agent recovers any job left active');
    else this.logger.warn({ timeoutMs, running: this.inFlight.size }, 'reconciles still running at shutdown; aborting them, the next agent recovers their jobs');
    worker.cancelAllJobs('nodelet shutting down');
    this.stopRuns.abort(new ReconcileQueueStateError('nodelet shutting down'));
    const closed = await this.redisAnswersWithin(
      worker.close(true).catch((err: unknown) => {
        this.logger.debug({ err }, 'closing the worker failed');
      }),
    );
    if (!closed) this.dropConnections();
    return true;
  }

  private watchWorker(worker: Worker<ReconcileJobData, RunRecord>): void {
    worker.on('error', (err) => {
      // Connection errors are retried by BullMQ without an event (and logged by the connection);
      // what arrives here is a failed queue operation, e.g. finishing a job that a flush deleted.
      this.logger.warn({ err }, 'reconcile worker error');
    });
    worker.on('completed', () => {
      this.activity += 1; // finished in Redis after the run ended: the counts changed again
    });
    worker.on('failed', (job, err) => {
      this.activity += 1;
      if (err instanceof TerminalRunFailure) return; // the runner logged it
      this.logger.warn({ err, jobId: job?.id, podUID: job?.data.uid }, 'reconcile job failed');
    });
    worker.on('stalled', (jobId) => {
      this.logger.warn({ jobId }, 'reconcile job stalled (its worker died); running it again');
    });
    worker.on('lockRenewalFailed', (jobIds) => {
      for (const jobId of jobIds) {
        // Another worker may run this job soon: tell the handler it no longer owns the UID.
        worker.cancelJob(jobId, 'lost the job lock');
      }
    });
  }

  private dropPendingNext(job: Job<ReconcileJobData>): Promise<boolean> {
    if (job.id === undefined) return Promise.resolve(false);
    const keys = { delayed: this.queue.toKey('delayed'), dedupNext: this.queue.toKey(`dn:${job.data.uid}`) };
    return dropPendingNextIfDelayed(this.redis, keys, job.id);
  }

  private assertOpen(operation: string): void {
    if (this.closing) throw new ReconcileQueueStateError(`${operation}: reconcile queue is closed`);
  }
}

function validConcurrency(n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`concurrency must be an integer ≥ 1, got ${n}`);
  return n;
}

/** QUIT, or a dropped connection when QUIT fails or the connection is down (a QUIT would wait for the reconnect). */
function quitOrDisconnect(redis: RedisClient): Promise<void> {
  if (redis.status !== 'ready') {
    redis.disconnect();
    return Promise.resolve();
  }
  return redis.quit().then(
    () => undefined,
    () => {
      redis.disconnect();
    },
  );
}
