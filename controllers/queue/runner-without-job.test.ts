/**
 * A run without a job (`Runner.runWithoutJob`, the periodic resync's run of a pod that has no job):
 * it shares the per-UID guard with the job processor, forgets the backoff only on a plain success,
 * leaves the failure count alone otherwise, and is preemptible. The BullMQ job is a stand-in with
 * only what the processor touches.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { DEFAULT_RECONCILE_BACKOFF, FailureCounter } from './policy.js';
import { RunPreemption } from './preemption.js';
import type { ReconcileJobData } from './redis.js';
import type { Reconciler, ReconcileResult } from '../../util/reconcile.js';
import { createRunner, type RunMetric, type RunRecord } from './runner.js';

const ref = { uid: 'u1', namespace: 'ns', name: 'p' };

function fakeJob(): Job<ReconcileJobData, RunRecord> {
  const job = { id: 'u1.1', data: { ...ref, reason: 'event' }, attemptsStarted: 1, log: () => Promise.resolve(1) };
  return job as unknown as Job<ReconcileJobData, RunRecord>;
}

function setup(reconciler: Reconciler): { failures: FailureCounter; runs: RunMetric[]; preemption: RunPreemption; runner: ReturnType<typeof createRunner> } {
  const failures = new FailureCounter();
  const runs: RunMetric[] = [];
  const preemption = new RunPreemption();
  const runner = createRunner({
    reconciler,
    failures,
    backoff: DEFAULT_RECONCILE_BACKOFF,
    clock: createFakeClock(),
    logger: pino({ level: 'silent' }),
    dropPendingNextIfDelayed: () => Promise.resolve(false),
    metrics: { runFinished: (run) => runs.push(run) },
    preemption,
  });
  return { failures, runs, preemption, runner };
}

describe('a reconcile run without a job', () => {
  it('forgets the backoff on a plain success and records the run', async () => {
    const s = setup({ reconcile: () => Promise.resolve({}) });
    s.failures.set('u1', 3);
    assert.equal(await s.runner.runWithoutJob(ref, 'resync', new AbortController().signal), 'success');
    assert.equal(s.failures.get('u1'), 0);
    assert.deepEqual(s.runs, [{ outcome: 'success', seconds: 0, retry: false }]);
  });

  it('leaves the failure count alone when it fails or asks to run later (the job it hands over to applies the policy)', async () => {
    const outcomes: (ReconcileResult | Error)[] = [new Error('runtime unavailable'), { requeueAfterMs: 5_000 }];
    const s = setup({ reconcile: () => {
      const next = outcomes.shift();
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next ?? {});
    } });
    s.failures.set('u1', 2);
    assert.equal(await s.runner.runWithoutJob(ref, 'resync', new AbortController().signal), 'error');
    assert.equal(await s.runner.runWithoutJob(ref, 'resync', new AbortController().signal), 'requeue');
    assert.equal(s.failures.get('u1'), 2);
  });

  it("makes a job's run of the same UID wait for it, and is preemptible", async () => {
    const order: string[] = [];
    let release: () => void = () => undefined;
    const s = setup({
      reconcile: (_ref, { reason, signal }) => {
        order.push(`start ${reason}`);
        if (reason !== 'resync') return Promise.resolve({});
        return new Promise((resolve, reject) => {
          release = () => { resolve({}); };
          signal?.addEventListener('abort', () => { reject(signal.reason instanceof Error ? signal.reason : new Error('aborted')); });
        });
      },
    });
    const withoutJob = s.runner.runWithoutJob(ref, 'resync', new AbortController().signal);
    await new Promise((resolve) => setImmediate(resolve));
    const jobRun = s.runner.processor(fakeJob(), 'token', undefined);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, ['start resync'], "the job's run waits for the run without a job");
    assert.equal(s.preemption.inFlight('u1'), true, 'housekeeping sees the run in flight');
    assert.equal(s.preemption.preempt('u1', 'the pod is being deleted'), true);
    assert.equal(await withoutJob, 'preempted');
    await jobRun;
    assert.deepEqual(order, ['start resync', 'start event']);
    release();
  });
});
