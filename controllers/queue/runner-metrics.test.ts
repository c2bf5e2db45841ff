/**
 * The job processor's metric records: one per finished run, with the run's duration from the
 * injected clock and its outcome; a failure that is retried with backoff is a retry, a requeue,
 * a success or a terminal failure is not. The BullMQ job is a stand-in with only what the
 * processor touches (data, log, moveToDelayed); the real queue is exercised by the integration suite.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { DEFAULT_RECONCILE_BACKOFF, FailureCounter } from './policy.js';
import type { ReconcileJobData } from './redis.js';
import { TerminalReconcileError, type ReconcileResult } from '../../util/reconcile.js';
import { createProcessor, type RunMetric, type RunRecord } from './runner.js';

function fakeJob(): Job<ReconcileJobData, RunRecord> {
  const job = {
    id: 'job-1',
    data: { uid: 'u1', namespace: 'ns', name: 'p', reason: 'test' },
    attemptsStarted: 1,
    log: () => Promise.resolve(1),
    moveToDelayed: () => Promise.resolve(),
  };
  return job as unknown as Job<ReconcileJobData, RunRecord>;
}

describe('reconcile run metrics', () => {
  it('records each run’s outcome and duration; only a failure retried with backoff is a retry', async () => {
    const clock = createFakeClock();
    const runs: RunMetric[] = [];
    const results: (() => Promise<ReconcileResult>)[] = [
      async () => {
        await clock.advance(1500);
        return {};
      },
      () => Promise.resolve({ requeueAfterMs: 10_000 }),
      () => Promise.reject(new Error('runtime down')),
      () => Promise.reject(new TerminalReconcileError('bad spec')),
    ];
    const processor = createProcessor({
      reconciler: { reconcile: () => (results.shift() ?? (() => Promise.resolve({})))() },
      failures: new FailureCounter(),
      backoff: DEFAULT_RECONCILE_BACKOFF,
      clock,
      logger: pino({ level: 'silent' }),
      dropPendingNextIfDelayed: () => Promise.resolve(false),
      metrics: { runFinished: (run) => runs.push(run) },
    });
    await processor(fakeJob(), 'token', undefined);
    await assert.rejects(processor(fakeJob(), 'token', undefined));
    await assert.rejects(processor(fakeJob(), 'token', undefined));
    await assert.rejects(processor(fakeJob(), 'token', undefined));
    assert.deepEqual(runs, [
      { outcome: 'success', seconds: 1.5, retry: false },
      { outcome: 'requeue', seconds: 0, retry: false },
      { outcome: 'error', seconds: 0, retry: true },
      { outcome: 'terminal', seconds: 0, retry: false },
    ]);
  });
});
