import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BatchResult } from './agent-startup.js';
import type { Sample } from './compare.js';
import { MAX_PODS, batchSamples, freshnessSamples, rawSamples, steadySamples } from './samples.js';
import { summarize } from './stats.js';

const byMeasure = (samples: readonly Sample[]): Record<string, number> => Object.fromEntries(samples.map((s) => [s.measure, s.value]));

const batch = (over: Partial<BatchResult> = {}): BatchResult => ({
  count: 4,
  create: summarize([1000, 2000, 3000, 4000]),
  rejected: 0,
  deleteGoneMs: 2500,
  cpuSecondsCreate: 0.3,
  cpuSecondsDelete: 0.1,
  peakRssBytes: 150 * 2 ** 20,
  idle: undefined,
  ...over,
});

describe('batchSamples', () => {
  it('converts one agent batch into the report units', () => {
    const samples = batchSamples('kubelet', 2, batch());
    assert.ok(samples.every((s) => s.target === 'kubelet' && s.round === 2 && s.size === 4));
    assert.deepEqual(byMeasure(samples), {
      'create.p50': 2,
      'create.p99': 4,
      'create.throughput': 1,
      'delete.gone': 2.5,
      'agent.cpuPerPod': 100,
      'agent.peakRss': 150,
    });
  });

  it('adds idle CPU in millicores and idle RSS when the batch had an idle window', () => {
    const values = byMeasure(batchSamples('nodelet', 1, batch({ idle: { cpuSeconds: 1.5, windowMs: 30_000, rssBytes: 120 * 2 ** 20 } })));
    assert.equal(values['idle.cpu'], 50);
    assert.equal(values['idle.rss'], 120);
  });

  it('counts rejected pods only for a batch above maxPods', () => {
    assert.equal(byMeasure(batchSamples('nodelet', 1, batch({ rejected: 3 })))['create.rejected'], undefined);
    assert.equal(byMeasure(batchSamples('nodelet', 1, batch({ count: MAX_PODS + 1, rejected: 3 })))['create.rejected'], 3);
  });
});

describe('rawSamples, freshnessSamples, steadySamples', () => {
  it('takes the raw teardown as delete → gone', () => {
    const values = byMeasure(rawSamples(1, { count: 2, concurrency: 4, create: summarize([500, 1000]), teardownMs: 800 }));
    assert.deepEqual(values, { 'create.p50': 0.5, 'create.p99': 1, 'create.throughput': 2, 'delete.gone': 0.8 });
  });

  it('gives freshness p50 and max in seconds, nothing for no pods', () => {
    assert.deepEqual(byMeasure(freshnessSamples('nodelet', 1, [300, 1200, 700])), { 'fresh.p50': 0.7, 'fresh.max': 1.2 });
    assert.deepEqual(freshnessSamples('nodelet', 1, []), []);
  });

  it('gives steady p50, p99 and CPU per pod', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => (i + 1) * 10);
    assert.deepEqual(byMeasure(steadySamples('kubelet', 3, { latenciesMs: latencies, cpuSeconds: 5 })), { 'steady.p50': 0.5, 'steady.p99': 0.99, 'steady.cpuPerPod': 50 });
  });
});
