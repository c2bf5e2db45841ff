import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunRecord } from '../controllers/queue/runner.js';
import type { JobSnapshot } from './job-history.js';
import { buildTimeline } from './pod-timeline.js';

const UID = '0d9e5c1a-0000-4000-8000-00000000abcd';
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const data = { uid: UID, namespace: 'shop', name: 'api-0', reason: 'pod added' };

const record = (run: number, overrides: Partial<RunRecord> = {}): RunRecord => ({
  run,
  reason: 'pod added',
  attempt: run,
  outcome: 'success',
  startedAt: new Date(T0 + run * 10_000).toISOString(),
  durationMs: 100,
  ...overrides,
});

const job = (overrides: Partial<JobSnapshot>): JobSnapshot => ({
  node: 'n1',
  queueName: 'nodelet-reconcile-n1',
  id: `${UID}.a`,
  state: 'completed',
  data,
  enqueuedAt: T0,
  runsStarted: 0,
  runs: [],
  ...overrides,
});

describe('buildTimeline', () => {
  it('lists every recorded run of every job, newest first, with outcome, duration, next run and error', () => {
    const failing = job({
      id: `${UID}.b`,
      state: 'delayed',
      enqueuedAt: T0 + 5000,
      runsStarted: 2,
      runs: [
        record(1, { outcome: 'error', attempt: 1, nextRunInMs: 1000, error: 'pull failed' }),
        record(2, { outcome: 'error', attempt: 2, nextRunInMs: 2000, error: 'pull failed again' }),
      ],
    });
    const done = job({ id: `${UID}.a`, state: 'completed', runsStarted: 1, runs: [record(0)], finishedOn: T0 + 100 });
    const timeline = buildTimeline(UID, [done, failing]);
    assert.deepEqual(
      timeline.rows.map((r) => [r.jobId, r.run, r.outcome, r.attempt, r.durationMs, r.error]),
      [
        [`${UID}.b`, 2, 'error', 2, 100, 'pull failed again'],
        [`${UID}.b`, 1, 'error', 1, 100, 'pull failed'],
        [`${UID}.a`, 0, 'success', 0, 100, undefined],
      ],
    );
    assert.equal(timeline.rows[0]?.nextRunAt, T0 + 20_000 + 100 + 2000);
    assert.deepEqual(timeline.names, ['shop/api-0']);
    assert.deepEqual(timeline.nodes, ['n1']);
  });

  it('judges a delayed job after an error as retrying, counting consecutive failures', () => {
    const timeline = buildTimeline(UID, [
      job({ state: 'delayed', runsStarted: 1, runs: [record(1, { outcome: 'error', attempt: 4, nextRunInMs: 8000, error: 'no sandbox' })] }),
    ]);
    assert.deepEqual(timeline.verdict, { kind: 'retrying', failures: 4, error: 'no sandbox', nextRunAt: T0 + 10_000 + 100 + 8000 });
  });

  it('judges a delayed job after a success as requeued', () => {
    const timeline = buildTimeline(UID, [job({ state: 'delayed', runsStarted: 1, runs: [record(1, { outcome: 'requeue', nextRunInMs: 5000 })] })]);
    assert.deepEqual(timeline.verdict, { kind: 'requeued', nextRunAt: T0 + 10_000 + 100 + 5000 });
  });

  it('judges the pod by its newest job, not by older ones', () => {
    const old = job({ id: `${UID}.a`, state: 'failed', runsStarted: 1, runs: [record(1, { outcome: 'terminal', error: 'bad spec' })], finishedOn: T0 + 11_000 });
    const newer = job({ id: `${UID}.b`, state: 'completed', enqueuedAt: T0 + 20_000, runsStarted: 1, runs: [record(3)], finishedOn: T0 + 30_100 });
    assert.deepEqual(buildTimeline(UID, [newer, old]).verdict, { kind: 'settled', at: T0 + 30_100 });
    assert.deepEqual(buildTimeline(UID, [old]).verdict, { kind: 'failed', error: 'bad spec' });
  });

  it('adds a row for a job waiting for a worker and one for a run in progress', () => {
    const waiting = buildTimeline(UID, [job({ state: 'waiting', enqueuedAt: T0 + 1 })]);
    assert.deepEqual(
      waiting.rows.map((r) => [r.kind, r.at, r.reason]),
      [['queued', T0 + 1, 'pod added']],
    );
    assert.deepEqual(waiting.verdict, { kind: 'queued', since: T0 + 1 });
    const running = buildTimeline(UID, [job({ state: 'active', processedOn: T0 + 50, runsStarted: 1 })]);
    assert.deepEqual(
      running.rows.map((r) => [r.kind, r.at]),
      [['running', T0 + 50]],
    );
    assert.deepEqual(running.verdict, { kind: 'running', since: T0 + 50 });
    assert.equal(running.untracedRuns, 0);
  });

  it('shows a job that failed without a run record (stalled too often) with BullMQ’s reason', () => {
    const timeline = buildTimeline(UID, [job({ state: 'failed', failedReason: 'job stalled more than allowable limit', finishedOn: T0 + 9, runsStarted: 4 })]);
    assert.deepEqual(
      timeline.rows.map((r) => [r.kind, r.error]),
      [['failed', 'job stalled more than allowable limit']],
    );
    assert.deepEqual(timeline.verdict, { kind: 'failed', error: 'job stalled more than allowable limit' });
    assert.equal(timeline.untracedRuns, 4);
  });

  it('has no rows and an unknown verdict without jobs', () => {
    const timeline = buildTimeline(UID, []);
    assert.deepEqual(timeline.rows, []);
    assert.deepEqual(timeline.verdict, { kind: 'unknown' });
  });
});
