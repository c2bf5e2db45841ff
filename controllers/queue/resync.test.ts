/**
 * The periodic resync without a job per pod (`resync.ts`) against fakes of Redis' look-up, the
 * enqueue and the job-less run: what is asked of Redis per batch, which pods run where, and what
 * happens to a run that does not simply succeed. The real queue: test/integration/reconcile-queue-idle.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { PodKey } from '../../util/pod-key.js';
import type { RunOutcome } from './policy.js';
import { ResyncBatcher } from './resync.js';

const pod = (uid: string): PodKey => ({ uid, namespace: 'ns', name: uid });

interface Harness {
  readonly batcher: ResyncBatcher;
  /** Each look-up's UIDs. */
  readonly lookups: string[][];
  readonly enqueued: string[];
  readonly ran: string[];
  /** Job-less runs in flight now, and the most at once. */
  readonly parallel: { now: number; most: number };
  open: boolean;
}

function harness(options: { withJob?: ReadonlySet<string>; outcomes?: Readonly<Record<string, RunOutcome['kind']>>; lookupFails?: boolean; parallelRuns?: number } = {}): Harness {
  const h: Omit<Harness, 'batcher'> = { lookups: [], enqueued: [], ran: [], parallel: { now: 0, most: 0 }, open: true };
  const batcher = new ResyncBatcher({
    jobsHeld: (uids) => {
      h.lookups.push([...uids]);
      if (options.lookupFails === true) return Promise.reject(new Error('Redis is unreachable'));
      return Promise.resolve(uids.map((uid) => options.withJob?.has(uid) === true));
    },
    enqueue: (ref, reason) => {
      h.enqueued.push(`${ref.uid}: ${reason}`);
      return Promise.resolve();
    },
    runWithoutJob: async (ref) => {
      h.parallel.now += 1;
      h.parallel.most = Math.max(h.parallel.most, h.parallel.now);
      await new Promise((resolve) => setImmediate(resolve));
      h.parallel.now -= 1;
      h.ran.push(ref.uid);
      return options.outcomes?.[ref.uid] ?? 'success';
    },
    parallelRuns: () => options.parallelRuns ?? 4,
    open: () => h.open,
    logger: pino({ level: 'silent' }),
  });
  return Object.assign(h, { batcher });
}

describe('ResyncBatcher', () => {
  it('looks 30 pods up in one request, runs those without a job here and enqueues the others', async () => {
    const withJob = new Set(['p3', 'p7']);
    const h = harness({ withJob });
    const uids = Array.from({ length: 30 }, (_, i) => `p${i}`);
    await Promise.all(uids.map((uid) => h.batcher.request(pod(uid), 'resync')));
    assert.deepEqual(h.lookups, [uids], 'one look-up for the whole resync');
    assert.deepEqual(h.enqueued.sort(), ['p3: resync', 'p7: resync']);
    assert.deepEqual(h.ran.sort(), uids.filter((uid) => !withJob.has(uid)).sort());
    assert.equal(h.parallel.most, 4, 'at most parallelRuns at once');
  });

  it('asks for one pod requested twice in a batch once', async () => {
    const h = harness();
    await Promise.all([h.batcher.request(pod('a'), 'resync'), h.batcher.request(pod('a'), 'resync')]);
    assert.deepEqual(h.lookups, [['a']]);
    assert.deepEqual(h.ran, ['a']);
  });

  it('hands a pod whose job-less run did not simply succeed to the queue, naming the outcome', async () => {
    const h = harness({ outcomes: { err: 'error', later: 'requeue', bad: 'terminal', moot: 'preempted' } });
    await Promise.all(['ok', 'err', 'later', 'bad', 'moot'].map((uid) => h.batcher.request(pod(uid), 'resync')));
    assert.deepEqual(h.enqueued.sort(), ['bad: resync (terminal without a job)', 'err: resync (error without a job)', 'later: resync (requeue without a job)', 'moot: resync (preempted without a job)']);
  });

  it('rejects every request of a batch Redis could not be asked about, running nothing', async () => {
    const h = harness({ lookupFails: true });
    const results = await Promise.allSettled(['a', 'b'].map((uid) => h.batcher.request(pod(uid), 'resync')));
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    assert.deepEqual(h.ran, []);
    assert.deepEqual(h.enqueued, []);
  });

  it('starts no job-less run once the queue is closing', async () => {
    const h = harness({ parallelRuns: 1 });
    const first = h.batcher.request(pod('a'), 'resync');
    const second = h.batcher.request(pod('b'), 'resync');
    h.open = false;
    await Promise.all([first, second]);
    assert.deepEqual(h.ran, []);
  });

  it('makes a new batch for requests after the previous one was sent', async () => {
    const h = harness();
    await h.batcher.request(pod('a'), 'resync');
    await h.batcher.request(pod('b'), 'resync');
    assert.deepEqual(h.lookups, [['a'], ['b']]);
  });
});
