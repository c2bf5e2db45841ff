import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createFakeClock, settle } from '../test/doubles/fake-clock.js';
import { createPeriodicLoop } from './periodic-loop.js';

const logger = pino({ level: 'silent' });

function recordingLoop(outcomes: boolean[] = []) {
  const clock = createFakeClock(0);
  const runsAt: number[] = [];
  const loop = createPeriodicLoop({
    name: 'test',
    periodMs: 10_000,
    backoff: { initialMs: 500, maxMs: 4000 },
    clock,
    logger,
    run: () => {
      runsAt.push(clock.now());
      const ok = outcomes.shift() ?? true;
      return ok ? Promise.resolve() : Promise.reject(new Error('api down'));
    },
  });
  return { clock, loop, runsAt };
}

describe('createPeriodicLoop', () => {
  it('runs at once on start and then once per period', async () => {
    const { clock, loop, runsAt } = recordingLoop();
    loop.start();
    await clock.advance(35_000);
    assert.deepEqual(runsAt, [0, 10_000, 20_000, 30_000]);
    assert.equal(loop.lastSuccessAt(), 30_000);
    await loop.stop();
  });

  it('retries failures with doubling backoff capped below the period, then returns to the period', async () => {
    const { clock, loop, runsAt } = recordingLoop([false, false, false, false, false, true]);
    loop.start();
    await clock.advance(30_000);
    // Failures at 0, 500, 1500, 3500, 7500; success at 11500; next period at 21500.
    assert.deepEqual(runsAt, [0, 500, 1500, 3500, 7500, 11_500, 21_500]);
    assert.equal(loop.consecutiveFailures(), 0);
    await loop.stop();
  });

  it('counts consecutive failures and never rejects', async () => {
    const { clock, loop } = recordingLoop([false, false]);
    loop.start();
    await clock.advance(600);
    assert.equal(loop.consecutiveFailures(), 2);
    assert.equal(loop.lastSuccessAt(), undefined);
    await loop.stop();
  });

  it('runs on demand and restarts the period from that run', async () => {
    const { clock, loop, runsAt } = recordingLoop();
    loop.start();
    await clock.advance(4000);
    assert.equal(await loop.runNow(), true);
    await clock.advance(10_000);
    assert.deepEqual(runsAt, [0, 4000, 14_000]);
    await loop.stop();
  });

  it('coalesces on-demand runs requested while one is in flight into a single follow-up run', async () => {
    const clock = createFakeClock(0);
    let release: (() => void) | undefined;
    let runs = 0;
    const loop = createPeriodicLoop({
      name: 'slow',
      periodMs: 10_000,
      backoff: { initialMs: 500, maxMs: 4000 },
      clock,
      logger,
      run: () => {
        runs += 1;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    loop.start();
    await settle();
    const first = loop.runNow();
    const second = loop.runNow();
    assert.equal(first, second);
    release?.();
    await settle();
    release?.();
    assert.equal(await first, true);
    assert.equal(runs, 2);
    await loop.stop();
  });

  it('reports an on-demand run that failed', async () => {
    const { loop } = recordingLoop([false]);
    assert.equal(await loop.runNow(), false);
    await loop.stop();
  });

  it('never runs again once stopped', async () => {
    const { clock, loop, runsAt } = recordingLoop();
    loop.start();
    await loop.stop();
    await clock.advance(60_000);
    assert.equal(await loop.runNow(), false);
    assert.deepEqual(runsAt, [0]);
    assert.equal(clock.pendingTimers(), 0);
  });
});
