import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exitAfterSeconds } from './status-freshness.js';

describe('status freshness exit times', () => {
  it('are whole seconds apart plus an even share of the one-second relist period, so no two pods meet the relist at one phase', () => {
    const times = Array.from({ length: 5 }, (_, i) => exitAfterSeconds(i, 5));
    assert.deepEqual(times, ['2.00', '3.20', '4.40', '5.60', '6.80']);
    const phases = new Set(times.map((t) => Number(t) % 1).map((p) => p.toFixed(2)));
    assert.equal(phases.size, 5);
  });
});
