/**
 * Preempting a run through the processor: the handler's signal aborts with a RunPreemptedError,
 * the run is recorded `preempted` (not a failure: the failure count stays, no retry metric), and the
 * job moves to delayed due now; the queue's own signal aborting is still an error, and a run that
 * is not in flight cannot be preempted. The BullMQ job is a stand-in with only what the processor
 * touches; the real queue is exercised by the integration suite.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DelayedError, type Job } from 'bullmq';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { DEFAULT_RECONCILE_BACKOFF, FailureCounter } from './policy.js';
import { isRunPreemptedError, RunPreemption } from './preemption.js';
import type { ReconcileJobData } from './redis.js';
import type { Reconciler } from '../../util/reconcile.js';
import { createProcessor, type RunMetric, type RunRecord } from './runner.js';

interface Recorded {
  readonly job: Job<ReconcileJobData, RunRecord>;
  readonly logs: RunRecord[];
  readonly delayedTo: number[];
}

function fakeJob(uid: string): Recorded {
  const logs: RunRecord[] = [];
  const delayedTo: number[] = [];
  const job = {
    id: `${uid}.1`,
    data: { uid, namespace: 'ns', name: uid, reason: 'test' },
    attemptsStarted: 1,
    log: (line: string) => {
      logs.push(JSON.parse(line) as RunRecord);
      return Promise.resolve(1);
    },
    moveToDelayed: (timestamp: number) => {
      delayedTo.push(timestamp);
      return Promise.resolve();
    },
  };
  return { job: job as unknown as Job<ReconcileJobData, RunRecord>, logs, delayedTo };
}

/** A reconciler that waits until its signal aborts, then throws the abort reason (as a CRI call does); it records each reason. */
function untilAborted(reasons: unknown[]): Reconciler {
  return {
    reconcile: (_ref, { signal }) =>
      new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () => {
          reasons.push(signal.reason);
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        });
      }),
  };
}

function setup(reconciler: Reconciler): { preemption: RunPreemption; failures: FailureCounter; runs: RunMetric[]; processor: ReturnType<typeof createProcessor> } {
  const preemption = new RunPreemption();
  const failures = new FailureCounter();
  const runs: RunMetric[] = [];
  const processor = createProcessor({
    reconciler,
    failures,
    backoff: DEFAULT_RECONCILE_BACKOFF,
    clock: createFakeClock(),
    logger: pino({ level: 'silent' }),
    dropPendingNextIfDelayed: () => Promise.resolve(false),
    metrics: { runFinished: (run) => runs.push(run) },
    preemption,
  });
  return { preemption, failures, runs, processor };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('preempting a reconcile run', () => {
  it('aborts the run’s signal, records it preempted and runs the job again now, keeping the failure count', async () => {
    const reasons: unknown[] = [];
    const s = setup(untilAborted(reasons));
    s.failures.set('u1', 2);
    const other = fakeJob('u2');
    const target = fakeJob('u1');
    const otherRun = s.processor(other.job, 'token', new AbortController().signal);
    const run = s.processor(target.job, 'token', new AbortController().signal);
    await settle();
    assert.equal(s.preemption.size, 2);
    const before = Date.now();
    assert.equal(s.preemption.preempt('u1', 'the pod is being deleted'), true);
    await assert.rejects(run, DelayedError);
    assert.equal(reasons.length, 1);
    assert.ok(isRunPreemptedError(reasons[0]) && reasons[0].why === 'the pod is being deleted');
    assert.deepEqual(target.logs.map((r) => [r.outcome, r.attempt, r.nextRunInMs]), [['preempted', 3, 0]]);
    assert.equal(target.delayedTo.length, 1);
    assert.ok(target.delayedTo[0]! >= before && target.delayedTo[0]! <= Date.now(), 'due now');
    assert.equal(s.failures.get('u1'), 2);
    assert.deepEqual(s.runs, [{ outcome: 'preempted', seconds: 0, retry: false }]);
    // The other UID's run goes on, and a settled run can no longer be preempted.
    assert.equal(s.preemption.preempt('u1', 'again'), false);
    assert.equal(s.preemption.size, 1);
    assert.equal(s.preemption.preempt('u2', 'cleanup'), true);
    await assert.rejects(otherRun, DelayedError);
  });

  it('still counts a run whose queue signal aborted (lost lock, shutdown) as a failure', async () => {
    const s = setup(untilAborted([]));
    const target = fakeJob('u1');
    const queueSignal = new AbortController();
    const run = s.processor(target.job, 'token', queueSignal.signal);
    await settle();
    queueSignal.abort(new Error('lost the job lock'));
    await assert.rejects(run, DelayedError);
    assert.deepEqual(target.logs.map((r) => r.outcome), ['error']);
    assert.equal(s.failures.get('u1'), 1);
    assert.equal(s.preemption.size, 0);
  });

  it('keeps the result of a run that finished before noticing its preemption', async () => {
    const late: { preemption?: RunPreemption } = {};
    const s = setup({
      reconcile: () => {
        late.preemption?.preempt('u1', 'late');
        return Promise.resolve({});
      },
    });
    late.preemption = s.preemption;
    const target = fakeJob('u1');
    await s.processor(target.job, 'token', undefined);
    assert.deepEqual(target.logs.map((r) => r.outcome), ['success']);
  });

  it('preempts nothing when no run of the UID is in flight', () => {
    assert.equal(new RunPreemption().preempt('u1', 'nothing runs'), false);
  });
});
