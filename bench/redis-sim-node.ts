/**
 * One simulated agent's use of Redis, for the Redis benchmarks (`redis-load.ts`, `redis-idle.ts`):
 * nodelet's real reconcile queue (`createReconcileQueue` with the agent's options: concurrency 4,
 * per-UID deduplication, the history, the sentinel check, its two connections), driven the way
 * the agent drives it:
 * - the NodeAgent health sample every 2 s reads the counts through `sampleCounts`, as
 *   `controllers/nodeagent/start.ts` does;
 * - the periodic resync every 60 s asks `resync` for every pod, as the pod event dispatcher does
 *   for the `resync` events of `store.resyncAll()`; the queue's own resync (Redis lost jobs) too;
 * - pod events enqueue: a new pod makes three (API event, PLEG once its containers start, the
 *   status write's echo), a deleted one two (API event, PLEG).
 * A reconcile takes 10 ms, then succeeds.
 *
 * Enqueue → run latency: each pod event's enqueue is timed to the start of the next reconcile of
 * its UID (the run that covers it: events coalesce, so several enqueues end at one run). Resync
 * requests are not timed (a resync of a pod without a job runs without one, at once).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createReconcileQueue, type ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { ClusterSettings } from '../controllers/queue/redis-cluster.js';
import type { PodKey } from '../util/pod-key.js';

export const HEALTH_PERIOD_MS = 2_000;
export const RESYNC_PERIOD_MS = 60_000;
const RECONCILE_MS = 10;
const logger = pino({ level: 'silent' });

/** Enqueues (resync requests included) and reconciles (job-less ones included) of every simulated node, counted. */
export class Counters {
  enqueues = 0;
  runs = 0;
  failedEnqueues = 0;
  /** Enqueue → run latencies of pod events (ms), in the order their runs started. */
  readonly latenciesMs: number[] = [];
  /** Pod events enqueued and not yet covered by a run. */
  outstandingEvents = 0;
  /** Burst pods not yet reconciled once since they were added. */
  burstOutstanding = 0;
  /** When the last burst pod's first reconcile started (performance.now()); undefined while any is outstanding. */
  burstDrainedAt: number | undefined;
}

/** Burst drain since `startedAt` (performance.now()): when every burst pod had its first reconcile, or how many have not. */
export function burstDrain(counters: Counters, startedAt: number): { burstDrainMs?: number; burstOutstanding?: number } {
  if (counters.burstOutstanding > 0) return { burstOutstanding: counters.burstOutstanding };
  return counters.burstDrainedAt === undefined ? {} : { burstDrainMs: counters.burstDrainedAt - startedAt, burstOutstanding: 0 };
}

/**
 * What an agent does with its queue besides pod events: the NodeAgent health sample every 2 s
 * (`sampleCounts`, as `controllers/nodeagent/start.ts`), and the periodic resync of every pod every
 * 60 s, first at `phase` ∈ [0, 1) of the period. The timers go into `timers`, for the caller to clear.
 */
export function startAgentRhythm(queue: Pick<ReconcileQueue, 'sampleCounts'>, phase: number, resyncAll: () => void, timers: NodeJS.Timeout[]): void {
  timers.push(setInterval(() => void queue.sampleCounts().catch(() => undefined), HEALTH_PERIOD_MS));
  timers.push(
    setTimeout(() => {
      resyncAll();
      timers.push(setInterval(resyncAll, RESYNC_PERIOD_MS));
    }, phase * RESYNC_PERIOD_MS),
  );
}

let podSerial = 0;
function newPod(node: string): PodKey {
  podSerial += 1;
  return { uid: `00000000-0000-4000-8000-${podSerial.toString(16).padStart(12, '0')}`, namespace: 'bench', name: `${node}-pod-${podSerial}` };
}

/** One simulated agent's use of Redis. */
export class SimNode {
  private readonly queue: ReconcileQueue;
  private readonly pods: PodKey[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  /** Per UID, when each pod event not yet covered by a run was enqueued (performance.now()). */
  private readonly pending = new Map<string, number[]>();
  /** UIDs of burst pods not yet reconciled once. */
  private readonly awaitingFirstRun = new Set<string>();

  constructor(
    private readonly name: string,
    redisUrl: string,
    private readonly counters: Counters,
    cluster?: ClusterSettings,
  ) {
    this.queue = createReconcileQueue({ redisUrl, ...(cluster === undefined ? {} : { cluster }), nodeName: name, concurrency: 4, logger });
    this.queue.onResync(() => {
      this.resync();
    });
  }

  /** `resyncPhase` in [0, 1): where in the resync period this node's resyncs fall. */
  async start(podsPerNode: number, resyncPhase: number): Promise<void> {
    await this.queue.start({
      reconcile: async (ref) => {
        this.runStarts(ref.uid);
        await sleep(RECONCILE_MS);
        this.counters.runs += 1;
        return {};
      },
    });
    for (let i = 0; i < podsPerNode; i += 1) this.addPod();
    startAgentRhythm(this.queue, resyncPhase, () => { this.resync(); }, this.timers);
  }

  /** A run of `uid` starts: it covers every event of the UID enqueued so far. */
  private runStarts(uid: string): void {
    if (this.awaitingFirstRun.delete(uid)) {
      this.counters.burstOutstanding -= 1;
      if (this.counters.burstOutstanding === 0) this.counters.burstDrainedAt = performance.now();
    }
    const since = this.pending.get(uid);
    if (since === undefined) return;
    this.pending.delete(uid);
    this.counters.outstandingEvents -= since.length;
    const now = performance.now();
    for (const t of since) this.counters.latenciesMs.push(now - t);
  }

  private enqueue(pod: PodKey, reason: string): void {
    this.counters.enqueues += 1;
    this.counters.outstandingEvents += 1;
    const since = this.pending.get(pod.uid);
    if (since === undefined) this.pending.set(pod.uid, [performance.now()]);
    else since.push(performance.now());
    this.queue.enqueue(pod, reason).catch(() => {
      this.counters.failedEnqueues += 1;
    });
  }

  private later(ms: number, action: () => void): void {
    const timer = setTimeout(action, ms);
    this.timers.push(timer);
  }

  /** Every pod, in one synchronous pass (one look-up in Redis for all of them). */
  private resync(): void {
    for (const pod of this.pods) {
      this.counters.enqueues += 1;
      this.queue.resync(pod, 'resync').catch(() => {
        this.counters.failedEnqueues += 1;
      });
    }
  }

  /**
   * A new pod: the API event, then PLEG once its containers start, then the status write's echo.
   * A burst pod counts in {@link Counters.burstOutstanding} until its first reconcile starts.
   */
  addPod(burst = false): void {
    const pod = newPod(this.name);
    this.pods.push(pod);
    if (burst) {
      this.awaitingFirstRun.add(pod.uid);
      this.counters.burstOutstanding += 1;
      this.counters.burstDrainedAt = undefined;
    }
    this.enqueue(pod, 'pod added');
    this.later(300, () => { this.enqueue(pod, 'pleg'); });
    this.later(1_000, () => { this.enqueue(pod, 'pod updated'); });
  }

  /** The oldest pod deleted: the API event, then PLEG once its containers stop. */
  deletePod(): void {
    const pod = this.pods.shift();
    if (pod === undefined) return;
    this.enqueue(pod, 'pod deleted');
    this.later(300, () => { this.enqueue(pod, 'pleg'); });
  }

  async jobsKept(): Promise<number> {
    const c = await this.queue.counts();
    return c.waiting + c.active + c.delayed + c.completed + c.failed;
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    await this.queue.close();
  }
}
