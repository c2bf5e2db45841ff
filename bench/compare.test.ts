import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { median, roundOrder, roundRatios, rowKeys, spread, valuesOf, type Sample } from './compare.js';

const sample = (s: Partial<Sample> & Pick<Sample, 'target' | 'round' | 'value'>): Sample => ({ measure: 'create.p50', size: 30, ...s });

describe('median and spread', () => {
  it('takes the middle value, or the mean of the two middle ones, whatever the order', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('gives min / median / max of the finite values only', () => {
    assert.deepEqual(spread([5, Number.NaN, 1, 3]), { count: 3, min: 1, median: 3, max: 5 });
    assert.equal(spread([Number.NaN]), undefined);
  });
});

describe('roundRatios', () => {
  const samples: Sample[] = [
    sample({ target: 'nodelet', round: 1, value: 2 }),
    sample({ target: 'kubelet', round: 1, value: 4 }),
    sample({ target: 'nodelet', round: 2, value: 3 }),
    sample({ target: 'kubelet', round: 2, value: 2 }),
    // Round 3 has no kubelet sample, round 4 a zero denominator: neither gives a ratio.
    sample({ target: 'nodelet', round: 3, value: 9 }),
    sample({ target: 'nodelet', round: 4, value: 1 }),
    sample({ target: 'kubelet', round: 4, value: 0 }),
    // Another N and another measure are other rows.
    sample({ target: 'kubelet', round: 3, value: 1, size: 110 }),
    sample({ target: 'kubelet', round: 3, value: 1, measure: 'create.p99' }),
  ];

  it('pairs the paths within each round, never across rounds', () => {
    assert.deepEqual(roundRatios(samples, { measure: 'create.p50', size: 30 }, 'nodelet', 'kubelet'), [0.5, 1.5]);
  });

  it('is empty when the denominator path never ran', () => {
    assert.deepEqual(roundRatios(samples, { measure: 'create.p50', size: 30 }, 'nodelet', 'raw CRI'), []);
  });

  it('reads one row of one path in round order', () => {
    assert.deepEqual(valuesOf(samples, { measure: 'create.p50', size: 30 }, 'nodelet'), [2, 3, 9, 1]);
  });
});

describe('rowKeys', () => {
  it('lists each (measure, N) once, measures in the catalogue order, then by N', () => {
    const keys = rowKeys([
      sample({ target: 'nodelet', round: 1, value: 1, measure: 'steady.p99', size: undefined }),
      sample({ target: 'nodelet', round: 1, value: 1, measure: 'create.p99', size: 110 }),
      sample({ target: 'kubelet', round: 1, value: 1, measure: 'create.p99', size: 30 }),
      sample({ target: 'nodelet', round: 2, value: 1, measure: 'create.p99', size: 30 }),
      sample({ target: 'nodelet', round: 1, value: 1, measure: 'create.p50', size: 110 }),
    ]);
    assert.deepEqual(keys, [
      { measure: 'create.p50', size: 110 },
      { measure: 'create.p99', size: 30 },
      { measure: 'create.p99', size: 110 },
      { measure: 'steady.p99', size: undefined },
    ]);
  });
});

describe('roundOrder', () => {
  it('rotates the paths so each runs first in some round', () => {
    const paths = ['nodelet', 'kubelet', 'raw CRI'];
    assert.deepEqual(roundOrder(paths, 0), ['nodelet', 'kubelet', 'raw CRI']);
    assert.deepEqual(roundOrder(paths, 1), ['kubelet', 'raw CRI', 'nodelet']);
    assert.deepEqual(roundOrder(paths, 2), ['raw CRI', 'nodelet', 'kubelet']);
    assert.deepEqual(roundOrder(paths, 3), paths);
    assert.deepEqual(roundOrder([], 1), []);
  });
});
