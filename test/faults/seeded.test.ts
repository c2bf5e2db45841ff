/** The fault campaigns' seeded schedule and printed figures (no cluster needed). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SeededRandom, minMedianMax, runSeed } from './seeded.js';

describe('SeededRandom', () => {
  it('repeats the same schedule for the same seed, and another for another seed', () => {
    const draw = (seed: number): number[] => {
      const random = new SeededRandom(seed);
      return [random.int(0, 5000), random.int(0, 5000), ...random.pick(['a', 'b', 'c', 'd', 'e'], 3).map((x) => x.charCodeAt(0))];
    };
    assert.deepEqual(draw(42), draw(42));
    assert.notDeepEqual(draw(42), draw(43));
  });

  it('draws integers within the bounds, both reachable', () => {
    const random = new SeededRandom(7);
    const seen = new Set(Array.from({ length: 200 }, () => random.int(2, 4)));
    assert.deepEqual([...seen].sort(), [2, 3, 4]);
  });

  it('picks distinct items, no more than there are', () => {
    const random = new SeededRandom(1);
    const picked = random.pick(['a', 'b', 'c'], 5);
    assert.equal(picked.length, 3);
    assert.equal(new Set(picked).size, 3);
  });
});

describe('runSeed', () => {
  it('takes FAULTS_SEED when set, and rejects what is not a seed', () => {
    const saved = process.env.FAULTS_SEED;
    try {
      process.env.FAULTS_SEED = '12345';
      assert.equal(runSeed(), 12345);
      process.env.FAULTS_SEED = 'x';
      assert.throws(() => runSeed(), /FAULTS_SEED/);
    } finally {
      if (saved === undefined) delete process.env.FAULTS_SEED;
      else process.env.FAULTS_SEED = saved;
    }
  });
});

describe('minMedianMax', () => {
  it('prints min, lower median and max whatever the order', () => {
    assert.equal(minMedianMax([30, 10, 20, 40]), 'min 10 ms, median 20 ms, max 40 ms');
    assert.equal(minMedianMax([5], 's'), 'min 5 s, median 5 s, max 5 s');
    assert.equal(minMedianMax([]), 'no values');
  });
});
