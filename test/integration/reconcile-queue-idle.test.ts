/**
 * What an idle agent's queue costs Redis, and that the cheap paths keep their promises, against a
 * redis-server of the test's own (so `CLIENT LIST` and `INFO commandstats` are the queue's alone):
 * 2 connections per queue instance; a resync of 30 pods that have no job costs one command and adds
 * no job, yet reconciles every pod; a pod that has a job, fails without one, or is resynced while
 * Redis may have lost jobs still goes through a job; and a quiet minute with the agent's health
 * sample every 2 s and one resync stays under 180 commands (3 per second). Counts, not timings:
 * every wait is an "eventually" limit.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReconcileQueue, ResyncCause } from '../../controllers/queue/reconcile-queue.js';
import { Recorder, cleanUpFixtures, eventually, fixture, maxParallel, pod } from './helpers/reconcile-queue-fixture.js';
import { clientNames, commandCalls, startPrivateRedis, totalCalls, type PrivateRedis } from './helpers/private-redis.js';
import type { PodKey } from '../../util/pod-key.js';

/** Background work pushed past the test's windows, so the commands counted are the ones asked for. */
const QUIET = { stall: { stalledIntervalMs: 120_000 }, stateCheckIntervalMs: 120_000, drainDelaySeconds: 120 } as const;

const pods = (n: number): PodKey[] => Array.from({ length: n }, (_, i) => pod(`idle-${i}`));

/** Runs of the queue's jobs in Redis: completed + failed + waiting + active + delayed. */
async function jobsInRedis(queue: ReconcileQueue): Promise<number> {
  const c = await queue.counts();
  return c.completed + c.failed + c.waiting + c.active + c.delayed;
}

let redis: PrivateRedis;
before(async () => {
  redis = await startPrivateRedis();
});
afterEach(cleanUpFixtures);
after(async () => {
  await redis.stop();
});

void describe("an idle agent's queue and Redis", () => {
  void it('holds 2 connections per queue instance: its own and the Worker\'s blocking one, named after the worker (CLIENT LIST)', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const a = f.queue();
    await a.start(recorder.reconciler('a'));
    const one = await clientNames(redis.admin);
    assert.equal(one.length, 2, `connections of one instance: ${one.join(', ')}`);
    assert.equal(one.filter((name) => name === 'nodelet-queue').length, 1);
    const blocking = `${f.prefix}:${Buffer.from(`nodelet-reconcile-${f.nodeName}`).toString('base64')}:w:`;
    assert.equal(one.filter((name) => name.startsWith(blocking)).length, 1, "the blocking connection carries the worker's name (orphan recovery reads it)");
    const b = f.queue();
    await b.start(recorder.reconciler('b'));
    assert.equal((await clientNames(redis.admin)).length, 4, 'a second instance adds 2');
  });

  void it('resyncs 30 pods that have no job with one Redis command, reconciling each once and adding no job', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET });
    await queue.start(recorder.reconciler('a'));
    for (const ref of pods(30)) await recorder.event(queue, ref, 'created');
    await eventually(() => recorder.runs.length === 30, 'every pod reconciled once');
    await f.drained(queue);
    const jobsBefore = await jobsInRedis(queue);
    await redis.admin.config('RESETSTAT');
    await Promise.all(pods(30).map((ref) => queue.resync(ref, 'resync')));
    const calls = await commandCalls(redis.admin);
    assert.deepEqual(Object.fromEntries(calls), { mget: 1 }, 'the resync asked Redis one thing');
    assert.equal(recorder.runs.filter((r) => r.reason === 'resync').length, 30, 'every pod reconciled by the resync');
    assert.equal(await jobsInRedis(queue), jobsBefore, 'no job added');
  });

  void it('enqueues a resynced pod that has a job (a backoff is cut short) and hands one whose run without a job failed to the queue', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET, backoff: { initialMs: 60_000, maxMs: 60_000 } });
    const failing = new Set(['backoff', 'breaks']);
    await queue.start(recorder.reconciler('a', (ref) => (failing.has(ref.uid) ? Promise.reject(new Error('runtime unavailable')) : Promise.resolve({}))));
    await recorder.event(queue, pod('backoff'), 'created');
    await eventually(async () => (await queue.counts()).delayed === 1, 'the failed pod waits out a 60 s backoff');
    failing.delete('backoff');
    await Promise.all([queue.resync(pod('backoff'), 'resync'), queue.resync(pod('breaks'), 'resync')]);
    await eventually(() => recorder.runsOf('backoff').length === 2, 'the pod in backoff ran again at once');
    // `breaks` failed without a job, then as a job: the failure is the queue's (retried, backed off, in Redis).
    await eventually(async () => recorder.runsOf('breaks').length === 2 && (await queue.counts()).delayed === 1, 'the pod that failed without a job waits out its backoff as a job');
    assert.deepEqual(recorder.runsOf('breaks').map((r) => r.reason), ['resync', 'resync (error without a job)']);
  });

  void it('never runs a pod without a job and as a job at once: an event during the run waits for it', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    await queue.start(recorder.reconciler('a', async (_ref, context) => {
      if (context.reason === 'resync') await held;
      return {};
    }));
    const resynced = queue.resync(pod('shared'), 'resync');
    await eventually(() => queue.runInFlight('shared'), 'the run without a job started');
    await recorder.event(queue, pod('shared'), 'updated');
    await sleep(300); // the job is taken meanwhile, and must wait
    assert.equal(recorder.runsOf('shared').length, 0, 'nothing finished while the run without a job holds the pod');
    release();
    await resynced;
    await eventually(() => recorder.runsOf('shared').length === 2, 'the event ran after the resync');
    const [first, second] = recorder.runsOf('shared');
    assert.ok(first !== undefined && second !== undefined && first.end <= second.start, 'the two runs did not overlap');
    assert.deepEqual([first.reason, second.reason], ['resync', 'updated']);
  });

  void it("keeps the resync's runs without a job and the events' jobs within one concurrency together", async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET, concurrency: 2 });
    await queue.start(recorder.reconciler('a', async () => {
      await sleep(30);
      return {};
    }));
    const resynced = Promise.all(pods(8).map((ref) => queue.resync(ref, 'resync')));
    for (let i = 0; i < 8; i += 1) await recorder.event(queue, pod(`event-${i}`), 'created');
    await resynced;
    await eventually(() => recorder.runs.length === 16, 'every pod reconciled');
    assert.ok(maxParallel(recorder.runs) <= 2, `at most 2 reconciles at once, saw ${maxParallel(recorder.runs)}`);
  });

  void it('enqueues every pod of a resync asked while Redis may have lost jobs (a flush), so the jobs are back', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET });
    const causes: ResyncCause[] = [];
    queue.onResync((cause) => {
      causes.push(cause);
      for (const ref of pods(5)) void queue.resync(ref, 'resync').catch(() => undefined);
    });
    await queue.start(recorder.reconciler('a'));
    await redis.admin.flushall();
    await queue.sampleCounts(); // the health sample's probe finds the sentinel gone
    assert.deepEqual(causes, ['state-lost']);
    await eventually(async () => (await queue.counts()).completed === 5, 'the 5 pods ran as jobs, kept in Redis');
  });

  void it('reads the counts again only after a job change, proving Redis answers with one command otherwise', async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue({ ...QUIET });
    await queue.start(recorder.reconciler('a'));
    await recorder.event(queue, pod('c'), 'created');
    await f.drained(queue);
    await queue.sampleCounts();
    await redis.admin.config('RESETSTAT');
    for (let i = 0; i < 10; i += 1) await queue.sampleCounts();
    assert.deepEqual(Object.fromEntries(await commandCalls(redis.admin)), { set: 10 }, 'ten samples, ten sentinel refreshes');
    await recorder.event(queue, pod('c'), 'updated');
    await eventually(() => recorder.runsOf('c').length === 2, 'the event ran');
    await eventually(async () => (await queue.sampleCounts()).completed === 2, 'a sample after the job change reads the new counts');
  });

  void it('spends at most 180 commands (3 per second) in a quiet minute with 30 running pods: a health sample every 2 s and one resync', { timeout: 120_000 }, async () => {
    const f = fixture(redis.url);
    const recorder = new Recorder();
    const queue = f.queue(); // the agent's defaults: blocking wait 30 s, stalled check 10 s, sentinel 10 s
    await queue.start(recorder.reconciler('a'));
    for (const ref of pods(30)) await recorder.event(queue, ref, 'created');
    await f.drained(queue);
    await redis.admin.config('RESETSTAT');
    const minute = Date.now() + 60_000;
    await Promise.all(pods(30).map((ref) => queue.resync(ref, 'resync')));
    while (Date.now() < minute) {
      await queue.sampleCounts();
      await sleep(2_000);
    }
    const calls = await commandCalls(redis.admin);
    const total = totalCalls(calls);
    console.log(`quiet minute, 30 pods: ${total} commands (${[...calls].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name} ${n}`).join(', ')})`);
    assert.ok(total <= 180, `${total} commands in a quiet minute, more than 180`);
    assert.equal(recorder.runs.filter((r) => r.reason === 'resync').length, 30, 'the resync reached every pod');
  });
});
