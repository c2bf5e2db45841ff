/**
 * The periodic resync without a job per pod: the kubelet's periodic sync of every pod, which its
 * pod workers run in memory, costs here one Redis command per period instead of a job per pod.
 *
 * Every pod must be reconciled at least once per resync period. A job per pod did that at about 50
 * Redis commands per pod (the add, taking the job, finishing it, its run record): with 30 idle pods,
 * 25 of the agent's 29.5 commands/s (docs/redis.md). Instead, requests made in one turn of the event loop (a resync
 * names every pod in one synchronous pass) are gathered and looked up in one `MGET` of the pods'
 * deduplication keys (`heldDeduplicationKeys` in `redis.ts`):
 * - a UID with a job (waiting, delayed or active) is enqueued as before: the job covers the
 *   request, a delayed one (a backoff, a requeue-after) is made due now, an active one runs again
 *   after it;
 * - a UID without one is reconciled in this process, without a job (`Runner.runWithoutJob`): under
 *   the same per-UID guard as the jobs of this process (a job of the UID taken meanwhile waits for
 *   it), preemptible like them, and within the same concurrency budget (`run-slots.ts`), at most
 *   half of it at once so that events' jobs keep slots during a resync. A run that does not simply
 *   succeed (an error, a requeue-after, a terminal error, a preemption) hands the UID to the queue
 *   (an enqueue), whose job runs at once and applies the retry policy, so a failure found by a
 *   resync is retried, backed off and shown in the dashboard as any other.
 *
 * What a job-less run gives up: it is exclusive with the runs of this process only, not with
 * another process sharing the node's queue (the agent never runs two); it leaves no record in
 * Redis (the dashboard shows the events and failures of a pod, not its no-op resyncs); and it
 * does not run while Redis is unreachable (the look-up fails, as an enqueue would).
 */
import type { Logger } from 'pino';
import type { PodKey } from '../../util/pod-key.js';
import type { RunOutcome } from './policy.js';

/** What a {@link ResyncBatcher} works with. */
export interface ResyncDeps {
  /** For each UID, in order, whether it has a job in Redis; rejects when Redis is unreachable. */
  readonly jobsHeld: (uids: readonly string[]) => Promise<readonly boolean[]>;
  readonly enqueue: (ref: PodKey, reason: string) => Promise<void>;
  /** `Runner.runWithoutJob`, with the queue's shutdown signal. */
  readonly runWithoutJob: (ref: PodKey, reason: string) => Promise<RunOutcome['kind']>;
  /** How many job-less runs at once (read when a resync starts). */
  readonly parallelRuns: () => number;
  /** False once the queue is closing: job-less runs not started yet are dropped. */
  readonly open: () => boolean;
  readonly logger: Logger;
}

/** One request of the batch being gathered. */
interface Request {
  readonly ref: PodKey;
  readonly reason: string;
  readonly done: Deferred;
}

interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  let reject: (err: unknown) => void = () => undefined;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Gathers resync requests and carries each batch out as this file's header says. */
export class ResyncBatcher {
  private pending = new Map<string, Request>();

  constructor(private readonly deps: ResyncDeps) {}

  /**
   * Asks for a reconcile of `ref` at least once from now. Resolves once it ran without a job or its
   * enqueue was accepted; rejects when Redis could not be asked (the caller logs it: the next
   * resync, or the one after Redis reconnects, retries).
   */
  request(ref: PodKey, reason: string): Promise<void> {
    const known = this.pending.get(ref.uid);
    if (known !== undefined) return known.done.promise;
    if (this.pending.size === 0) {
      queueMicrotask(() => {
        void this.flush();
      });
    }
    const request: Request = { ref, reason, done: deferred() };
    this.pending.set(ref.uid, request);
    return request.done.promise;
  }

  private async flush(): Promise<void> {
    const batch = [...this.pending.values()];
    this.pending = new Map();
    let held: readonly boolean[];
    try {
      held = await this.deps.jobsHeld(batch.map((r) => r.ref.uid));
    } catch (err: unknown) {
      for (const r of batch) r.done.reject(err);
      return;
    }
    const withoutJob: Request[] = [];
    batch.forEach((r, i) => {
      if (held[i] === true) this.deps.enqueue(r.ref, r.reason).then(r.done.resolve, r.done.reject);
      else withoutJob.push(r);
    });
    this.deps.logger.debug({ pods: batch.length, withoutJob: withoutJob.length }, 'resync: pods without a job run in this process');
    await inParallel(withoutJob, this.deps.parallelRuns(), (r) => this.runOne(r));
  }

  /** Never rejects: the request's promise carries the failure. */
  private async runOne(r: Request): Promise<void> {
    try {
      if (!this.deps.open()) {
        r.done.resolve(); // the queue is closing: the next agent's resync covers the pod
        return;
      }
      const outcome = await this.deps.runWithoutJob(r.ref, r.reason);
      if (outcome !== 'success') await this.deps.enqueue(r.ref, `${r.reason} (${outcome} without a job)`);
      r.done.resolve();
    } catch (err: unknown) {
      r.done.reject(err);
    }
  }
}

/** Runs `work` over `items`, at most `limit` at once; `work` must not reject. */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next];
      next += 1;
      if (item !== undefined) await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}
