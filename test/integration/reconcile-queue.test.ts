/**
 * The reconcile queue against a real Redis (REDIS_URL, default redis://127.0.0.1:16379).
 * Every test uses a fresh key prefix and node name and obliterates its keys afterwards. The flush
 * test flushes only database FLUSH_DB; the restart test runs its own redis-server on RESTART_PORT,
 * the shutdown test on SILENT_PORT, the refused-enqueue test on REFUSING_PORT.
 * Time bounds are "eventually" limits, never performance assertions. Orphaned jobs of dead agents:
 * reconcile-queue-orphans.test.ts.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { ResyncCause } from '../../controllers/queue/reconcile-queue.js';
import { TerminalReconcileError } from '../../util/reconcile.js';
import {
  REDIS_URL,
  Recorder,
  assertLatestSeen,
  assertNoOverlap,
  cleanUpFixtures,
  eventually,
  fixture,
  maxParallel,
  parseRunLog,
  pod,
  produce,
  randomWork,
} from './helpers/reconcile-queue-fixture.js';
import { openConnectionsTo } from './helpers/own-sockets.js';
import { redisAnswers } from './helpers/private-redis.js';

/** The only database the flush test empties. */
const FLUSH_DB = 13;
/** Where the restart test runs (and kills) a redis-server of its own. */
const RESTART_PORT = 16390;
/** Where the shutdown test runs (and stops answering) a redis-server of its own. */
const SILENT_PORT = 16391;
/** Where the refused-enqueue test runs (and fills to its memory limit) a redis-server of its own. */
const REFUSING_PORT = 16392;
function urlWithDb(url: string, db: number): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

afterEach(cleanUpFixtures);

void describe('reconcile queue (real Redis)', () => {
  void it('never overlaps two reconciles of one UID and always ends on the latest event, with 8 workers', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ concurrency: 8 });
    await queue.start(recorder.reconciler('a', randomWork));
    await produce(recorder, [queue], { events: 200, uids: 20 });
    await f.drained(queue);
    assertNoOverlap(recorder.runs);
    assertLatestSeen(recorder);
  });

  void it('keeps that guarantee across two queue instances sharing the node queue (2 × concurrency 4)', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const a = f.queue({ concurrency: 4 });
    const b = f.queue({ concurrency: 4 });
    await a.start(recorder.reconciler('a', randomWork));
    await b.start(recorder.reconciler('b', randomWork));
    await produce(recorder, [a, b], { events: 200, uids: 20 });
    await f.drained(a);
    assertNoOverlap(recorder.runs);
    assertLatestSeen(recorder);
    const instances = new Set(recorder.runs.map((r) => r.instance));
    assert.deepEqual([...instances].sort(), ['a', 'b'], 'both instances should have reconciled');
  });

  void it('applies a concurrency change at runtime and rejects a concurrency below 1', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ concurrency: 1 });
    await queue.start(
      recorder.reconciler('a', async () => {
        await sleep(60);
        return {};
      }),
    );
    for (let i = 0; i < 4; i++) await recorder.event(queue, pod(`serial-${i}`));
    await f.drained(queue);
    assert.equal(maxParallel(recorder.runs), 1, 'concurrency 1 reconciles one UID at a time');

    queue.setConcurrency(4);
    assert.throws(() => {
      queue.setConcurrency(0);
    }, RangeError);
    const firstWave = recorder.runs.length;
    for (let i = 0; i < 8; i++) await recorder.event(queue, pod(`parallel-${i}`));
    await f.drained(queue);
    const secondWave = recorder.runs.slice(firstWave);
    assert.ok(maxParallel(secondWave) > 1, 'concurrency 4 reconciles different UIDs at once');
    assert.ok(maxParallel(secondWave) <= 4);
  });

  void it('reconciles an idle UID at most twice for a burst of 50 events, the last run seeing the last event', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue();
    // The burst is over long before one reconcile is: that is what a burst means here.
    await queue.start(
      recorder.reconciler('a', async () => {
        await sleep(200);
        return {};
      }),
    );
    const ref = pod('burst');
    for (let i = 0; i < 50; i++) await recorder.event(queue, ref);
    await f.drained(queue);
    const runs = recorder.runsOf('burst');
    assert.ok(runs.length >= 1 && runs.length <= 2, `expected 1 or 2 reconciles, got ${runs.length}`);
    assert.equal(runs.at(-1)!.version, 50);
  });

  void it('runs a UID waiting out a 60 s backoff again promptly when a new event arrives, keeping its failure count', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ backoff: { initialMs: 60_000, maxMs: 60_000 } });
    await queue.start(
      recorder.reconciler('a', (_ref, _ctx, nth) => (nth === 0 ? Promise.reject(new Error('runtime unavailable')) : Promise.resolve({}))),
    );
    const ref = pod('backoff');
    await recorder.event(queue, ref, 'created');
    await eventually(async () => (await queue.counts()).delayed === 1, 'the failed UID waits in delayed');
    assert.equal(recorder.runsOf('backoff').length, 1);

    await recorder.event(queue, ref, 'updated');
    await eventually(() => recorder.runsOf('backoff').length === 2, 'the new event ran the UID', 5_000);
    const [, second] = recorder.runsOf('backoff');
    assert.equal(second!.attempt, 2, 'the retry still counts the earlier failure');
    assert.equal(second!.version, 2);
    await f.drained(queue);
    assert.deepEqual(await queue.counts(), { waiting: 0, active: 0, delayed: 0, failed: 0, completed: 1 });
  });

  void it('lets a status-only event (enqueueIfIdle) neither cut a backoff short nor follow a failing run, and run an idle UID', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ backoff: { initialMs: 60_000, maxMs: 60_000 } });
    let releaseFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));
    const fail = async (): Promise<never> => { await firstGate; throw new Error('failed to create task: /tmp/runc-process123: no such file'); };
    await queue.start(recorder.reconciler('a', (ref, _ctx, nth) => (ref.uid !== 'echo' || nth > 0 ? Promise.resolve({}) : fail())));
    const ref = pod('echo');
    await recorder.event(queue, ref, 'created');
    await eventually(async () => (await queue.counts()).active === 1, 'the first run started');
    // The echoes of the failing run's own status write, during the run and after it.
    await queue.enqueueIfIdle(ref, 'status-updated');
    releaseFirst();
    await eventually(async () => (await queue.counts()).delayed === 1, 'the failed UID waits in delayed');
    await queue.enqueueIfIdle(ref, 'status-updated').then(() => sleep(500));
    assert.equal(recorder.runsOf('echo').length, 1, 'no status echo ran the failed UID again before its backoff');
    assert.equal((await queue.counts()).delayed, 1, 'still waiting out its backoff');
    await queue.enqueueIfIdle(pod('idle'), 'status-updated');
    await eventually(() => recorder.runsOf('idle').length === 1, 'a status-only event runs a UID that has no job', 5_000);
  });

  void it('runs a UID again right after a failed run when an event arrived during that run, not after the backoff', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ backoff: { initialMs: 60_000, maxMs: 60_000 } });
    let releaseFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));
    await queue.start(
      recorder.reconciler('a', async (_ref, _ctx, nth) => {
        if (nth > 0) return {};
        await firstGate;
        throw new Error('image pull failed');
      }),
    );
    const ref = pod('event-during-failure');
    await recorder.event(queue, ref, 'created');
    await eventually(async () => (await queue.counts()).active === 1, 'the first run started');
    await recorder.event(queue, ref, 'updated');
    releaseFirst();
    await eventually(() => recorder.runsOf(ref.uid).length === 2, 'the event ran the UID again', 5_000);
    await f.drained(queue);
    await sleep(300);
    const runs = recorder.runsOf(ref.uid);
    assert.equal(runs.length, 2, 'the pending event was consumed by the second run, not run a third time');
    assert.equal(runs[1]!.version, 2);
  });

  void it('runs a UID again after its requeueAfter delay', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue();
    await queue.start(recorder.reconciler('a', (_ref, _ctx, nth) => Promise.resolve(nth === 0 ? { requeueAfterMs: 400 } : {})));
    await recorder.event(queue, pod('requeue'));
    await eventually(async () => (await queue.counts()).delayed === 1, 'the requeue waits in delayed');
    const [delayed] = await f.inspector().getJobs(['delayed']);
    assert.equal(delayed!.delay, 400);
    await eventually(() => recorder.runsOf('requeue').length === 2, 'the requeue ran');
    const [first, second] = recorder.runsOf('requeue');
    assert.ok(second!.start - first!.end >= 350, `ran again after ${second!.start - first!.end} ms, before the 400 ms delay`);
    assert.equal(second!.attempt, 1, 'a requeue is not a failure');
  });

  void it('runs a UID with a pending requeueAfter immediately on a new event, and not again later', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue();
    await queue.start(recorder.reconciler('a', (_ref, _ctx, nth) => Promise.resolve(nth === 0 ? { requeueAfterMs: 30_000 } : {})));
    const ref = pod('requeue-then-event');
    await recorder.event(queue, ref, 'created');
    await eventually(async () => (await queue.counts()).delayed === 1, 'the requeue waits in delayed');
    await recorder.event(queue, ref, 'updated');
    await eventually(() => recorder.runsOf(ref.uid).length === 2, 'the event ran the UID', 5_000);
    await f.drained(queue);
    await sleep(300);
    assert.equal(recorder.runsOf(ref.uid).length, 2);
    assert.deepEqual(await queue.counts(), { waiting: 0, active: 0, delayed: 0, failed: 0, completed: 1 });
  });

  void it('runs a UID again right after a run that asked for requeueAfter when an event arrived during that run', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue();
    let releaseFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));
    await queue.start(
      recorder.reconciler('a', async (_ref, _ctx, nth) => {
        if (nth > 0) return {};
        await firstGate;
        return { requeueAfterMs: 30_000 };
      }),
    );
    const ref = pod('event-during-requeue');
    await recorder.event(queue, ref, 'created');
    await eventually(async () => (await queue.counts()).active === 1, 'the first run started');
    await recorder.event(queue, ref, 'updated');
    releaseFirst();
    await eventually(() => recorder.runsOf(ref.uid).length === 2, 'the event ran the UID', 5_000);
    await f.drained(queue);
    await sleep(300);
    assert.equal(recorder.runsOf(ref.uid).length, 2);
    assert.equal(recorder.runsOf(ref.uid)[1]!.version, 2);
  });

  void it('does not retry a TerminalReconcileError and fails the job', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ backoff: { initialMs: 50, maxMs: 1_000 } });
    await queue.start(recorder.reconciler('a', () => Promise.reject(new TerminalReconcileError('invalid volume spec'))));
    await recorder.event(queue, pod('terminal'));
    await eventually(async () => (await queue.counts()).failed === 1, 'the job failed');
    await sleep(300);
    assert.equal(recorder.runsOf('terminal').length, 1);
    assert.deepEqual(await queue.counts(), { waiting: 0, active: 0, delayed: 0, failed: 1, completed: 0 });
    const [failed] = await f.inspector().getJobs(['failed']);
    assert.match(failed!.failedReason, /invalid volume spec/);
    const [record] = parseRunLog((await f.inspector().getJobLogs(failed!.id!)).logs);
    assert.equal(record!.outcome, 'terminal');
    assert.equal(record!.nextRunInMs, undefined);
  });

  void it('retries other errors with doubling delays, recorded on the job, then forgets them on success', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const queue = f.queue({ backoff: { initialMs: 200, maxMs: 600 } });
    await queue.start(
      recorder.reconciler('a', (_ref, _ctx, nth) => (nth < 4 ? Promise.reject(new Error(`failure ${nth + 1}`)) : Promise.resolve({}))),
    );
    await recorder.event(queue, pod('retry'), 'created');
    await eventually(async () => (await queue.counts()).completed === 1, 'the job completed after its retries');
    // Every move to delayed, as BullMQ's event stream recorded it: due time minus the time of the
    // move. The due time is fixed a little before Redis runs the move, so a loaded machine shows a
    // few milliseconds less, never more.
    const delays = (await f.delayedEvents()).map((e) => e.dueAt - e.at);
    const expected = [200, 400, 600, 600];
    assert.equal(delays.length, expected.length, `delays seen: ${delays.join(', ')}`);
    delays.forEach((delay, i) => {
      const want = expected[i]!;
      assert.ok(delay <= want + 2 && delay > want - 100, `retry ${i + 1} was delayed ${delay} ms, expected ${want}`);
    });
    const runs = recorder.runsOf('retry');
    assert.deepEqual(
      runs.map((r) => r.attempt),
      [1, 2, 3, 4, 5],
    );
    const [job] = await f.inspector().getJobs(['completed']);
    const records = parseRunLog((await f.inspector().getJobLogs(job!.id!)).logs);
    assert.deepEqual(
      records.map((r) => [r.run, r.attempt, r.outcome, r.nextRunInMs, r.error]),
      [
        [1, 1, 'error', 200, 'failure 1'],
        [2, 2, 'error', 400, 'failure 2'],
        [3, 3, 'error', 600, 'failure 3'],
        [4, 4, 'error', 600, 'failure 4'],
        [5, 5, 'success', undefined, undefined],
      ],
    );
    assert.deepEqual(job!.returnvalue, records.at(-1));
    // Success forgot the failures: the next event starts at attempt 1.
    await recorder.event(queue, pod('retry'), 'updated');
    await eventually(() => recorder.runsOf('retry').length === 6, 'the next event ran');
    assert.equal(recorder.runsOf('retry').at(-1)!.attempt, 1);
  });

  void it('reconciles again, alone, a job whose agent died mid-reconcile (stalled recovery)', async () => {
    const f = fixture();
    const recorder = new Recorder();
    const stall = { lockDurationMs: 1_000, stalledIntervalMs: 300 };
    const crashed = f.queue({ stall, shutdownTimeoutMs: 100 });
    let releaseHung!: () => void;
    const hung = new Promise<void>((resolve) => (releaseHung = resolve));
    let hungStarted = false;
    await crashed.start({
      reconcile: async () => {
        hungStarted = true;
        await hung; // ignores its abort signal, like a process that froze and then died
        return {};
      },
    });
    const ref = pod('stalled');
    await recorder.event(crashed, ref, 'created');
    await eventually(() => hungStarted, 'the doomed run started');
    await crashed.close(); // times out on the hung run, aborts and drops the connection without releasing the job
    const crashedAt = performance.now();

    const survivor = f.queue({ stall });
    await survivor.start(
      recorder.reconciler('survivor', async () => {
        await sleep(100);
        return {};
      }),
    );
    await eventually(() => recorder.runsOf(ref.uid).length >= 1, 'the stalled job ran again', 10_000);
    assert.ok(recorder.runsOf(ref.uid)[0]!.start > crashedAt);
    for (let i = 0; i < 5; i++) {
      await recorder.event(survivor, ref, `update ${i}`);
      await sleep(40);
    }
    await f.drained(survivor);
    assertNoOverlap(recorder.runs);
    assertLatestSeen(recorder);

    const before = await survivor.counts();
    const runsBefore = recorder.runs.length;
    releaseHung(); // the dead agent's run "finishes" late: it must change nothing
    await sleep(300);
    assert.deepEqual(await survivor.counts(), before);
    assert.equal(recorder.runs.length, runsBefore);
  });

  void it('aborts the signal of a run whose job lock is lost, so its runtime calls stop (another agent may own the UID)', async () => {
    const f = fixture();
    const queue = f.queue({ stall: { lockDurationMs: 1_000, stalledIntervalMs: 60_000 } });
    let abortedAfterMs: number | undefined;
    let reason: unknown;
    let started = false;
    await queue.start({
      reconcile: async (_ref, context) => {
        started = true;
        const t0 = performance.now();
        await new Promise<void>((resolve) => context.signal?.addEventListener('abort', () => { resolve(); }, { once: true }));
        abortedAfterMs = performance.now() - t0;
        reason = context.signal?.reason;
        return {};
      },
    });
    await queue.enqueue(pod('lock-lost'), 'created');
    await eventually(() => started, 'the run started');
    const [job] = await f.inspector().getJobs(['active']);
    assert.ok(job?.id !== undefined, 'the job is active');
    // Another agent's stalled check would now take the job: its lock is gone.
    await f.redis().del(`${f.prefix}:nodelet-reconcile-${f.nodeName}:${job.id}:lock`);
    await eventually(() => abortedAfterMs !== undefined, 'the run was told to stop', 5_000);
    console.log(`lost lock: the run's signal aborted ${Math.round(abortedAfterMs!)} ms after the run started (lock 1000 ms, renewed every 500 ms)`);
    assert.ok(reason !== undefined, 'the abort carries a reason');
  });

  void it('aborts the signals of runs still going when close() times out (shutdown)', async () => {
    const f = fixture();
    const queue = f.queue({ shutdownTimeoutMs: 300 });
    let aborted = false;
    let started = false;
    await queue.start({
      reconcile: async (_ref, context) => {
        started = true;
        await new Promise<void>((resolve) => context.signal?.addEventListener('abort', () => { resolve(); }, { once: true }));
        aborted = context.signal?.aborted === true;
        return {};
      },
    });
    await queue.enqueue(pod('shutdown'), 'created');
    await eventually(() => started, 'the run started');
    await queue.close();
    await eventually(() => aborted, 'the run was aborted by the shutdown', 5_000);
  });

  void it('closes when its Redis stops answering (SIGSTOP: connections open, no replies), dropping the connections', async (t) => {
    if (await redisAnswers(SILENT_PORT)) {
      t.skip(`something already listens on ${SILENT_PORT}`);
      return;
    }
    const server = await startRedis(SILENT_PORT);
    try {
      const f = fixture(`redis://127.0.0.1:${SILENT_PORT}`);
      const recorder = new Recorder();
      // The default bound (5 s), as long as a blocking read (BullMQ's drainDelay, 5 s here, the
      // agent's is 30 s): by the time a step runs out, BullMQ's loop has given up on its read and
      // reconnected the blocking connection, which the shutdown must drop too (with a 500 ms bound
      // the drop came first).
      const queue = f.queue({ drainDelaySeconds: 5 });
      await queue.start(recorder.reconciler('a'));
      await recorder.event(queue, pod('before'));
      await eventually(() => recorder.runsOf('before').length === 1, 'the enqueue ran');
      // The queue's connection (the Queue's and the Worker's commands) and BullMQ's blocking duplicate of it.
      assert.equal(openConnectionsTo(SILENT_PORT), 2, 'connections to Redis before the shutdown');
      server.kill('SIGSTOP');
      let closed = false;
      const closing = queue.close().then(() => (closed = true));
      // Without the bound every step waits for a reply that only comes after SIGCONT.
      await eventually(() => closed, 'close() returned while Redis does not answer', 15_000);
      await closing;
      // Every connection closes (ioredis destroys a socket its peer leaves half-closed after 2 s),
      // BullMQ's blocking connection included, or it would keep the agent's process alive after
      // its shutdown, until Redis answered again.
      await eventually(() => openConnectionsTo(SILENT_PORT) === 0, 'every connection to Redis closed after close()', 10_000);
    } finally {
      server.kill('SIGCONT');
      await cleanUpFixtures();
      await stopRedis(server);
    }
  });

  void it('survives a flush of its Redis database, asks for a resync, and works for new enqueues', async () => {
    const url = urlWithDb(REDIS_URL, FLUSH_DB);
    const f = fixture(url);
    const recorder = new Recorder();
    const queue = f.queue({ stateCheckIntervalMs: 100 });
    const causes: ResyncCause[] = [];
    queue.onResync((cause) => {
      causes.push(cause);
    });
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    await queue.start(
      recorder.reconciler('a', async (ref) => {
        if (ref.uid === 'slow' && recorder.runsOf('slow').length === 0) await slowGate;
        return {};
      }),
    );
    await recorder.event(queue, pod('slow'), 'created');
    await eventually(async () => (await queue.counts()).active === 1, 'the slow run started');

    const admin = new Redis(url);
    try {
      await admin.flushdb();
    } finally {
      admin.disconnect();
    }
    releaseSlow(); // finishes a job whose keys are gone
    await eventually(() => causes.includes('state-lost'), 'the resync hook fired');

    await recorder.event(queue, pod('slow'), 'resync');
    await recorder.event(queue, pod('fresh'), 'resync');
    await eventually(() => recorder.runsOf('fresh').length === 1 && recorder.runsOf('slow').length === 2, 'enqueues after the flush ran');
    assertLatestSeen(recorder);
  });

  void it('asks for a resync once Redis accepts writes again after refusing an enqueue on a live connection (OOM)', async (t) => {
    // No reconnect and no lost state here: only the failed request can bring the refused pod's
    // event back (`requests-failed`); without it the pod waits for the agent's periodic resync.
    if (await redisAnswers(REFUSING_PORT)) {
      t.skip(`something already listens on ${REFUSING_PORT}`);
      return;
    }
    const server = await startRedis(REFUSING_PORT);
    const admin = new Redis(`redis://127.0.0.1:${REFUSING_PORT}`, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      const f = fixture(`redis://127.0.0.1:${REFUSING_PORT}`);
      const recorder = new Recorder();
      const queue = f.queue();
      const causes: ResyncCause[] = [];
      // As the agent does: a resync enqueues every pod it knows again.
      queue.onResync((cause) => {
        causes.push(cause);
        void recorder.event(queue, pod('refused'), `resync (${cause})`).catch(() => undefined);
      });
      await queue.start(recorder.reconciler('a'));
      await recorder.event(queue, pod('before'));
      await eventually(() => recorder.runsOf('before').length === 1, 'the first enqueue ran');

      await admin.config('SET', 'maxmemory', '1'); // every write refused: OOM, the connection stays up
      await assert.rejects(queue.enqueue(pod('refused'), 'created'), /OOM/, 'Redis refuses the enqueue');
      await sleep(2_500); // the first repair checks come while Redis still refuses: the backoff grows
      assert.equal(recorder.runsOf('refused').length, 0, 'nothing ran while Redis refused writes');
      await admin.config('SET', 'maxmemory', '0');

      await eventually(() => recorder.runsOf('refused').length === 1, "the refused pod's event ran after Redis accepted writes again", 20_000);
      assert.ok(causes.includes('requests-failed'), `a requests-failed resync fired (causes: ${causes.join(', ')})`);
      assert.ok(!causes.includes('reconnected') && !causes.includes('state-lost'), `no other cause could have brought it back (causes: ${causes.join(', ')})`);
      admin.disconnect(); // the test's own connection, counted below until its socket closes
      await eventually(() => openConnectionsTo(REFUSING_PORT) === 2, 'the queue kept its 2 connections throughout', 5_000);
    } finally {
      admin.disconnect();
      await cleanUpFixtures();
      await stopRedis(server);
    }
  });

  void it('asks for a resync after its Redis restarts, and works again', async (t) => {
    if (await redisAnswers(RESTART_PORT)) {
      t.skip(`something already listens on ${RESTART_PORT}`);
      return;
    }
    let server = await startRedis(RESTART_PORT);
    try {
      const f = fixture(`redis://127.0.0.1:${RESTART_PORT}`);
      const recorder = new Recorder();
      const queue = f.queue({ stateCheckIntervalMs: 100 });
      const causes: ResyncCause[] = [];
      queue.onResync((cause) => {
        causes.push(cause);
      });
      await queue.start(recorder.reconciler('a'));
      await recorder.event(queue, pod('before'));
      await eventually(() => recorder.runsOf('before').length === 1, 'the first enqueue ran');

      await stopRedis(server);
      await assert.rejects(queue.enqueue(pod('during'), 'outage'), 'enqueue reports the outage');
      server = await startRedis(RESTART_PORT);
      await eventually(() => causes.length > 0, 'the resync hook fired', 10_000);

      await recorder.event(queue, pod('after'));
      await eventually(() => recorder.runsOf('after').length === 1, 'an enqueue after the restart ran', 10_000);
    } finally {
      await cleanUpFixtures();
      await stopRedis(server);
    }
  });
});

async function startRedis(port: number): Promise<ChildProcess> {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  await eventually(() => redisAnswers(port), `redis-server on ${port} answers`, 5_000);
  return server;
}

async function stopRedis(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, 'exit');
  server.kill('SIGTERM');
  await exited;
}
