import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunRecord } from '../controllers/queue/runner.js';
import { LastRunCache, jobLabel } from './job-labels.js';

const data = { uid: 'u-1', namespace: 'shop', name: 'api-0', reason: 'pod updated' };
const run = (overrides: Partial<RunRecord>): RunRecord => ({
  run: 1,
  reason: 'pod updated',
  attempt: 1,
  outcome: 'success',
  startedAt: '2030-01-01T00:00:00.000Z',
  durationMs: 42,
  ...overrides,
});

describe('jobLabel', () => {
  it('names the pod and the completed run from the return value', () => {
    assert.equal(jobLabel({ name: 'reconcile', data, returnvalue: run({}) }, undefined), 'shop/api-0 · succeeded in 42 ms');
  });

  it('shows a delayed job’s failing run from its log, with the next attempt', () => {
    const last = run({ outcome: 'error', attempt: 3, durationMs: 12, nextRunInMs: 4000, error: 'boom' });
    assert.equal(jobLabel({ name: 'reconcile', data, returnvalue: null }, last), 'shop/api-0 · error (attempt 3) in 12 ms · next in 4.0 s');
  });

  it('shows a requeue with its delay', () => {
    assert.equal(
      jobLabel({ name: 'reconcile', data }, run({ outcome: 'requeue', nextRunInMs: 30_000 })),
      'shop/api-0 · requeued in 42 ms · next in 30 s',
    );
  });

  it('calls a job that has not run yet queued, with the reason it was enqueued', () => {
    assert.equal(jobLabel({ name: 'reconcile', data }, undefined), 'shop/api-0 · queued (pod updated)');
  });

  it('shows BullMQ’s reason for a job that failed without a run record', () => {
    assert.equal(
      jobLabel({ name: 'reconcile', data, failedReason: 'job stalled more than allowable limit' }, undefined),
      'shop/api-0 · failed: job stalled more than allowable limit',
    );
  });

  it('leaves jobs that are not reconcile jobs as they are', () => {
    assert.equal(jobLabel({ name: 'other', data: { anything: true } }, undefined), 'other');
  });
});

describe('LastRunCache', () => {
  it('keeps at most its capacity, dropping the least recently set', () => {
    const cache = new LastRunCache(2);
    cache.set('a', run({ run: 1 }));
    cache.set('b', run({ run: 2 }));
    cache.set('a', run({ run: 3 }));
    cache.set('c', run({ run: 4 }));
    assert.equal(cache.size, 2);
    assert.equal(cache.get('b'), undefined);
    assert.equal(cache.get('a')?.run, 3);
    assert.equal(cache.get('c')?.run, 4);
  });

  it('forgets a job whose log holds no record any more', () => {
    const cache = new LastRunCache();
    cache.set('a', run({}));
    cache.set('a', undefined);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.get(null), undefined);
  });
});
