/**
 * What the reconcile-queue integration tests share: a fresh queue namespace per test (`Fixture`),
 * a recorder of reconciles with the checks made on it, and polling.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createReconcileQueue, type ReconcileQueue, type ReconcileQueueOptions, type RunRecord } from '../../../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../../../util/pod-key.js';
import type { ReconcileContext, Reconciler, ReconcileResult } from '../../../util/reconcile.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';
export const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

export function pod(uid: string): PodKey {
  return { uid, namespace: 'default', name: `pod-${uid}` };
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return;
    await sleep(25);
  }
  assert.fail(`timed out waiting until ${what}`);
}

/** One recorded reconcile. */
export interface Run {
  readonly uid: string;
  readonly start: number;
  readonly end: number;
  /** The version of the pod in `store` when the run started. */
  readonly version: number | undefined;
  readonly attempt: number;
  readonly reason: string;
  readonly instance: string;
}

/** Records runs; `behave` decides what each run does after reading the store. */
export class Recorder {
  readonly runs: Run[] = [];
  readonly store = new Map<string, number>();
  /** Runs started per UID, so `behave` can act differently on the first, second… run. */
  private readonly startedRuns = new Map<string, number>();

  reconciler(
    instance: string,
    behave: (ref: PodKey, context: ReconcileContext, nth: number) => Promise<ReconcileResult> = () => Promise.resolve({}),
  ): Reconciler {
    const reconcile = async (ref: PodKey, context: ReconcileContext): Promise<ReconcileResult> => {
      const start = performance.now();
      const version = this.store.get(ref.uid);
      const nth = this.startedRuns.get(ref.uid) ?? 0;
      this.startedRuns.set(ref.uid, nth + 1);
      try {
        return await behave(ref, context, nth);
      } finally {
        this.runs.push({ uid: ref.uid, start, end: performance.now(), version, attempt: context.attempt, reason: context.reason, instance });
      }
    };
    return { reconcile };
  }

  /** Writes a new version of `ref` to the store, then enqueues it: what an informer event does. */
  async event(queue: ReconcileQueue, ref: PodKey, reason = 'update'): Promise<void> {
    this.store.set(ref.uid, (this.store.get(ref.uid) ?? 0) + 1);
    await queue.enqueue(ref, reason);
  }

  runsOf(uid: string): Run[] {
    return this.runs.filter((r) => r.uid === uid).sort((a, b) => a.start - b.start);
  }
}

export function assertNoOverlap(runs: readonly Run[]): void {
  for (const uid of new Set(runs.map((r) => r.uid))) {
    const ofUid = runs.filter((r) => r.uid === uid).sort((a, b) => a.start - b.start);
    for (let i = 1; i < ofUid.length; i++) {
      const prev = ofUid[i - 1]!;
      const next = ofUid[i]!;
      assert.ok(prev.end <= next.start, `reconciles of ${uid} overlap: [${prev.start}, ${prev.end}] and [${next.start}, ${next.end}]`);
    }
  }
}

/** The most runs that were in progress at one moment. */
export function maxParallel(runs: readonly Run[]): number {
  const edges = runs.flatMap((r) => [
    [r.start, 1],
    [r.end, -1],
  ]);
  // Ends sort before starts at the same instant: touching runs did not overlap.
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let current = 0;
  let max = 0;
  for (const [, delta] of edges) {
    current += delta!;
    max = Math.max(max, current);
  }
  return max;
}

export function assertLatestSeen(recorder: Recorder): void {
  for (const [uid, version] of recorder.store) {
    const ofUid = recorder.runsOf(uid);
    assert.ok(ofUid.length > 0, `${uid} was never reconciled`);
    assert.equal(ofUid.at(-1)!.version, version, `the last reconcile of ${uid} did not see its latest version`);
  }
}

/** A fresh queue namespace for one test, and its cleanup. */
export class Fixture {
  readonly id = randomBytes(4).toString('hex');
  readonly prefix = `nodelet-test-${this.id}`;
  readonly nodeName = `node-${this.id}`;
  private readonly queues: ReconcileQueue[] = [];
  private inspectorQueue: Queue | undefined;
  private inspectorRedis: Redis | undefined;

  constructor(readonly redisUrl = REDIS_URL) {}

  queue(overrides: Partial<ReconcileQueueOptions> = {}): ReconcileQueue {
    const queue = createReconcileQueue({
      redisUrl: this.redisUrl,
      nodeName: this.nodeName,
      concurrency: 4,
      logger,
      prefix: this.prefix,
      shutdownTimeoutMs: 2_000,
      ...overrides,
    });
    this.queues.push(queue);
    return queue;
  }

  /** A plain Redis connection to the test's database. */
  redis(): Redis {
    this.inspectorRedis ??= new Redis(this.redisUrl, { maxRetriesPerRequest: 3 });
    return this.inspectorRedis;
  }

  /** A plain BullMQ view of the same queue, to look at jobs. */
  inspector(): Queue {
    this.inspectorRedis ??= new Redis(this.redisUrl, { maxRetriesPerRequest: 3 });
    this.inspectorQueue ??= new Queue(`nodelet-reconcile-${this.nodeName}`, { connection: this.inspectorRedis, prefix: this.prefix });
    return this.inspectorQueue;
  }

  /** The queue's "delayed" events, oldest first: when each happened and when the job became due. */
  async delayedEvents(): Promise<{ jobId: string; at: number; dueAt: number }[]> {
    this.inspector();
    const entries = await this.inspectorRedis!.xrange(`${this.prefix}:nodelet-reconcile-${this.nodeName}:events`, '-', '+');
    return entries.flatMap(([id, fields]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
      if (f.get('event') !== 'delayed') return [];
      return [{ jobId: f.get('jobId') ?? '', at: Number(id.split('-')[0]), dueAt: Number(f.get('delay')) }];
    });
  }

  /** Waits until nothing is waiting, active or delayed (twice in a row). */
  async drained(queue: ReconcileQueue, timeoutMs = 15_000): Promise<void> {
    let quietPolls = 0;
    await eventually(async () => {
      const c = await queue.counts();
      quietPolls = c.waiting + c.active + c.delayed === 0 ? quietPolls + 1 : 0;
      return quietPolls >= 2;
    }, 'the queue drained', timeoutMs);
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.queues.map((q) => q.close().catch(() => undefined)));
    try {
      await this.inspector().obliterate({ force: true });
      const redis = this.inspectorRedis!;
      for await (const keys of redis.scanStream({ match: `${this.prefix}:*`, count: 500 })) {
        if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
      }
    } catch {
      // The restart test's server is gone by now; nothing is left to clean there.
    }
    await this.inspectorQueue?.close().catch(() => undefined);
    this.inspectorRedis?.disconnect();
  }
}

let fixtures: Fixture[] = [];
/** A fresh fixture, cleaned up by {@link cleanUpFixtures}. */
export function fixture(redisUrl?: string): Fixture {
  const f = new Fixture(redisUrl);
  fixtures.push(f);
  return f;
}
/** Closes every fixture's queues and deletes its keys: each test file's `afterEach`. */
export async function cleanUpFixtures(): Promise<void> {
  await Promise.all(fixtures.map((f) => f.cleanup()));
  fixtures = [];
}

export async function produce(recorder: Recorder, queues: readonly ReconcileQueue[], options: { events: number; uids: number }): Promise<void> {
  const refs = Array.from({ length: options.uids }, (_, i) => pod(`uid-${i}`));
  for (let i = 0; i < options.events; i++) {
    const ref = refs[Math.floor(Math.random() * refs.length)]!;
    await recorder.event(queues[i % queues.length]!, ref, `event ${i}`);
    await sleep(Math.floor(Math.random() * 3));
  }
}

export async function randomWork(): Promise<ReconcileResult> {
  await sleep(1 + Math.floor(Math.random() * 5));
  return {};
}

export function parseRunLog(lines: readonly string[]): RunRecord[] {
  return lines.map((line) => JSON.parse(line) as RunRecord);
}
