import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles from the initial delay and stops at the cap', () => {
    const policy = { initialMs: 1000, maxMs: 30_000 };
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(policy, n)), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('waits nothing before any failure and stays finite after very many', () => {
    const policy = { initialMs: 200, maxMs: 7000 };
    assert.equal(backoffDelay(policy, 0), 0);
    assert.equal(backoffDelay(policy, 10_000), 7000);
  });
});
