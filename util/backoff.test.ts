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

describe('backoffDelay with jitter (apimachinery wait.Jitter)', () => {
  it('spreads each delay over [delay, delay * (1 + jitter)) by the random source, the cap included', () => {
    const policy = { initialMs: 800, maxMs: 30_000, jitter: 1 };
    assert.equal(backoffDelay(policy, 1, () => 0), 800);
    assert.equal(backoffDelay(policy, 1, () => 0.5), 1200);
    assert.equal(backoffDelay(policy, 3, () => 0.25), 4000);
    assert.equal(backoffDelay(policy, 20, () => 0.999), 30_000 + 0.999 * 30_000, 'a capped delay jitters above the cap, as client-go');
    assert.equal(backoffDelay(policy, 0, () => 0.5), 0, 'nothing due, nothing jittered');
  });

  it('draws nothing and changes nothing without a jitter', () => {
    let drawn = 0;
    const random = (): number => {
      drawn += 1;
      return 0.5;
    };
    assert.equal(backoffDelay({ initialMs: 1000, maxMs: 30_000 }, 2, random), 2000);
    assert.equal(backoffDelay({ initialMs: 1000, maxMs: 30_000, jitter: 0 }, 2, random), 2000);
    assert.equal(drawn, 0);
  });
});
