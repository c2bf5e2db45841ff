import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inPool, percentile, summarize } from './stats.js';

describe('percentile', () => {
  it('takes the nearest rank, whatever the order of the values', () => {
    const values = [50, 10, 40, 20, 30, 60, 70, 80, 90, 100];
    assert.equal(percentile(values, 50), 50);
    assert.equal(percentile(values, 99), 100);
    assert.equal(percentile(values, 10), 10);
    assert.equal(percentile(values, 0), 10);
  });

  it('is NaN for no values', () => {
    assert.ok(Number.isNaN(percentile([], 50)));
  });
});

describe('summarize', () => {
  it('counts throughput from the batch start to the last pod', () => {
    const summary = summarize([500, 1000, 1500, 2000]);
    assert.equal(summary.count, 4);
    assert.equal(summary.p50Ms, 1000);
    assert.equal(summary.p99Ms, 2000);
    assert.equal(summary.maxMs, 2000);
    assert.equal(summary.throughputPerSec, 2);
  });
  it("summarizes a 5,000-node burst's 150,000 latencies (more than a spread passes as arguments)", () => {
    const latencies = Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 300_000);
    const summary = summarize(latencies);
    assert.equal(summary.count, 300_000);
    assert.equal(summary.maxMs, 299_999);
    assert.equal(summary.p50Ms, 149_999);
  });
});

describe('inPool', () => {
  it('never runs more tasks at once than the concurrency, and runs every item', async () => {
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    await inPool([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      done.push(item);
      inFlight--;
    });
    assert.equal(most, 3);
    assert.deepEqual(done.sort(), [1, 2, 3, 4, 5, 6, 7]);
  });

  it('runs everything at once without a concurrency', async () => {
    let inFlight = 0;
    let most = 0;
    await inPool([1, 2, 3, 4, 5], undefined, async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
    });
    assert.equal(most, 5);
  });
});
