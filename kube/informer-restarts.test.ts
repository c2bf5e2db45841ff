/**
 * InformerRestarts: a failed informer restarts after a capped exponential backoff, spread by the
 * policy's jitter over [d, d * (1 + jitter)) with the injected random source, so that restarts of
 * many clients after one outage do not coincide; one restart pending at a time, none after stop().
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { createFakeClock, settle } from '../test/doubles/fake-clock.js';
import { InformerRestarts } from './informer-restarts.js';

/** mulberry32: the same seed, the same numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const logger = pino({ level: 'silent' });

describe('InformerRestarts', () => {
  it('restarts after jittered delays within [d, 2d), doubling to the cap, reproducible from the seed', async () => {
    const run = async (seed: number): Promise<number[]> => {
      const clock = createFakeClock();
      const delays: number[] = [];
      const restarts = new InformerRestarts({ start: () => Promise.reject(new Error('API server down')), what: 'Nodes', backoff: { initialMs: 1000, maxMs: 8000, jitter: 1 }, clock, logger, random: seeded(seed) });
      await restarts.start();
      for (let i = 0; i < 6; i++) {
        const next = clock.nextTimerIn();
        assert.ok(next !== undefined, 'a restart is pending');
        delays.push(next);
        await clock.advance(next);
        await settle();
      }
      restarts.stop();
      assert.equal(clock.pendingTimers(), 0, 'none after stop()');
      return delays;
    };
    const delays = await run(36);
    [1000, 2000, 4000, 8000, 8000, 8000].forEach((base, i) => {
      const got = delays[i] ?? 0;
      assert.ok(got >= base && got < 2 * base, `restart ${i + 1}: ${got} in [${base}, ${2 * base})`);
    });
    assert.deepEqual(await run(36), delays, 'the same seed, the same delays');
    assert.notDeepEqual(await run(37), delays, 'another seed (another agent), other delays');
  });

  it('keeps one restart pending and starts the count over after a success', async () => {
    const clock = createFakeClock();
    let fail = true;
    let starts = 0;
    const restarts = new InformerRestarts({
      start: () => {
        starts += 1;
        return fail ? Promise.reject(new Error('down')) : Promise.resolve();
      },
      what: 'Nodes',
      backoff: { initialMs: 1000, maxMs: 8000 },
      clock,
      logger,
    });
    await restarts.start();
    restarts.failed(new Error('watch failed too'));
    assert.equal(clock.pendingTimers(), 1);
    await clock.advance(1000);
    await settle();
    assert.equal(clock.nextTimerIn(), 2000, 'the second failure in a row');
    fail = false;
    await clock.advance(2000);
    await settle();
    assert.equal(starts, 3);
    restarts.failed(new Error('watch dropped'));
    assert.equal(clock.nextTimerIn(), 1000, 'after a success the backoff starts over');
    restarts.stop();
  });
});
