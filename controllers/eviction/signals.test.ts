import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluateRound, INITIAL_EVICTION_STATE, thresholdsMet, thresholdToReclaim, type EvictionState, type Observations } from './signals.js';
import { parseThresholds, DEFAULT_EVICTION, type Threshold } from './thresholds.js';

const Mi = 2 ** 20;
const memory = (available: number): Observations => new Map([['memory.available', { available, capacity: 8192 * Mi }]]);
const hardMemory: Threshold = { signal: 'memory.available', value: { quantity: 100 * Mi, text: '100Mi' }, gracePeriodMs: 0, minReclaim: { quantity: 50 * Mi, text: '50Mi' } };
const softMemory: Threshold = { signal: 'memory.available', value: { quantity: 500 * Mi, text: '500Mi' }, gracePeriodMs: 30_000 };

function round(thresholds: readonly Threshold[], observations: Observations, previous: EvictionState, at: { nowMs: number; transitionPeriodMs?: number }): ReturnType<typeof evaluateRound> {
  return evaluateRound({ thresholds, observations, previous, nowMs: at.nowMs, transitionPeriodMs: at.transitionPeriodMs ?? 60_000 });
}

describe('eviction signals', () => {
  it('meets a threshold below its value; a percentage is of the capacity; an unobserved signal meets nothing', () => {
    assert.equal(thresholdsMet([hardMemory], memory(99 * Mi), false).length, 1);
    assert.equal(thresholdsMet([hardMemory], memory(100 * Mi), false).length, 0);
    const [, nodefs] = parseThresholds(DEFAULT_EVICTION);
    assert.ok(nodefs !== undefined);
    assert.equal(thresholdsMet([nodefs], new Map([['nodefs.available', { available: 9, capacity: 100 }]]), false).length, 1);
    assert.equal(thresholdsMet([nodefs], new Map([['nodefs.available', { available: 10, capacity: 100 }]]), false).length, 0);
    assert.equal(thresholdsMet([nodefs], memory(0), false).length, 0);
  });

  it('keeps a met threshold met until its minimum reclaim is reached', () => {
    const first = round([hardMemory], memory(90 * Mi), INITIAL_EVICTION_STATE, { nowMs: 0 });
    assert.deepEqual(first.acting.map((t) => t.signal), ['memory.available']);
    // Above the threshold, below threshold + min reclaim: still met.
    assert.equal(round([hardMemory], memory(120 * Mi), first.state, { nowMs: 10_000 }).acting.length, 1);
    assert.equal(round([hardMemory], memory(151 * Mi), first.state, { nowMs: 10_000 }).acting.length, 0);
  });

  it('acts on a soft threshold only once it has been met for its grace period, but raises the condition at once', () => {
    const first = round([softMemory], memory(400 * Mi), INITIAL_EVICTION_STATE, { nowMs: 0 });
    assert.deepEqual(first.acting, []);
    assert.deepEqual(first.conditions, ['MemoryPressure']);
    assert.deepEqual(round([softMemory], memory(400 * Mi), first.state, { nowMs: 29_999 }).acting, []);
    assert.equal(round([softMemory], memory(400 * Mi), first.state, { nowMs: 30_000 }).acting.length, 1);
    // Not met in between: the grace period starts again.
    const cleared = round([softMemory], memory(600 * Mi), first.state, { nowMs: 10_000 });
    assert.deepEqual(round([softMemory], memory(400 * Mi), cleared.state, { nowMs: 35_000 }).acting, []);
  });

  it('keeps a condition for the transition period after its threshold stopped being met', () => {
    const met = round([hardMemory], memory(50 * Mi), INITIAL_EVICTION_STATE, { nowMs: 0, transitionPeriodMs: 20_000 });
    const relieved = round([hardMemory], memory(1000 * Mi), met.state, { nowMs: 10_000, transitionPeriodMs: 20_000 });
    assert.deepEqual(relieved.conditions, ['MemoryPressure']);
    assert.deepEqual(relieved.acting, []);
    assert.deepEqual(round([hardMemory], memory(1000 * Mi), relieved.state, { nowMs: 19_999, transitionPeriodMs: 20_000 }).conditions, ['MemoryPressure']);
    assert.deepEqual(round([hardMemory], memory(1000 * Mi), relieved.state, { nowMs: 20_000, transitionPeriodMs: 20_000 }).conditions, []);
  });

  it('forgets a met threshold that was removed from the configuration', () => {
    const met = round([hardMemory], memory(50 * Mi), INITIAL_EVICTION_STATE, { nowMs: 0, transitionPeriodMs: 0 });
    const removed = round([], memory(50 * Mi), met.state, { nowMs: 10_000, transitionPeriodMs: 0 });
    assert.deepEqual(removed.acting, []);
    assert.deepEqual(removed.conditions, []);
  });

  it('reclaims memory before disk before PIDs, hard before soft', () => {
    const disk: Threshold = { signal: 'nodefs.available', value: { percentage: 0.1, text: '10%' }, gracePeriodMs: 0 };
    const pid: Threshold = { signal: 'pid.available', value: { quantity: 100, text: '100' }, gracePeriodMs: 0 };
    assert.equal(thresholdToReclaim([pid, disk, softMemory, hardMemory]), hardMemory);
    assert.equal(thresholdToReclaim([pid, disk]), disk);
    assert.equal(thresholdToReclaim([]), undefined);
  });
});
