import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createFakeClock, settle, type FakeClock } from '../test/doubles/fake-clock.js';
import { createPeriodicLoop, type PeriodicLoopOptions } from './periodic-loop.js';

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

  it('logs a failed run with the loop name instead of throwing, whether it rejects or throws', async () => {
    const clock = createFakeClock(0);
    const lines: { level: number; loop?: string; msg?: string }[] = [];
    const capture = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; loop?: string; msg?: string }) });
    const loop = createPeriodicLoop({
      name: 'thrower',
      periodMs: 1000,
      clock,
      logger: capture,
      run: () => {
        throw new Error('synchronous failure');
      },
    });
    loop.start();
    await settle();
    assert.equal(loop.consecutiveFailures(), 1);
    assert.deepEqual(
      lines.map((l) => [l.level, l.loop, l.msg]),
      [[40, 'thrower', 'loop run failed; retrying with backoff']],
    );
    await loop.stop();
  });
});

/** A loop (period 10 s) whose runs wait on `wait`, recording when each starts and how many ran at once. */
function overlapProbe(wait: (clock: FakeClock) => Promise<void>) {
  const clock = createFakeClock(0);
  const probe = { startsAt: [] as number[], active: 0, maxActive: 0 };
  const loop = createPeriodicLoop({
    name: 'probe',
    periodMs: 10_000,
    clock,
    logger,
    run: async () => {
      probe.startsAt.push(clock.now());
      probe.active += 1;
      probe.maxActive = Math.max(probe.maxActive, probe.active);
      await wait(clock);
      probe.active -= 1;
    },
  });
  return { clock, loop, probe };
}

describe('createPeriodicLoop scheduling options', () => {
  function loopWith(overrides: Partial<PeriodicLoopOptions>) {
    const clock = createFakeClock(0);
    const runsAt: number[] = [];
    const loop = createPeriodicLoop({
      name: 'test',
      periodMs: 10_000,
      clock,
      logger,
      run: () => {
        runsAt.push(clock.now());
      },
      ...overrides,
    });
    return { clock, loop, runsAt };
  }

  it('runs first one period after start when asked, then every period', async () => {
    const { clock, loop, runsAt } = loopWith({ firstRun: 'after-period' });
    loop.start();
    assert.deepEqual(runsAt, []);
    await clock.advance(35_000);
    assert.deepEqual(runsAt, [10_000, 20_000, 30_000]);
    await loop.stop();
  });

  it('jitters the delay after each run by up to the given fraction, but not the first run', async () => {
    const { clock, loop, runsAt } = loopWith({ firstRun: 'after-period', jitter: 0.1, random: () => 0.5 });
    loop.start();
    await clock.advance(40_000);
    // 10 s, then 10.5 s each (5% of the period).
    assert.deepEqual(runsAt, [10_000, 20_500, 31_000]);
    await loop.stop();
  });

  it('retries a failed run at the period when no backoff is given', async () => {
    const outcomes = [false, false, true];
    const { clock, loop, runsAt } = loopWith({
      periodMs: 1000,
      run: () => {
        runsAt.push(clock.now());
        return outcomes.shift() === false ? Promise.reject(new Error('down')) : Promise.resolve();
      },
    });
    loop.start();
    await clock.advance(3500);
    assert.deepEqual(runsAt, [0, 1000, 2000, 3000]);
    await loop.stop();
  });

  it('moves a scheduled tick to one new period from now when the period changes', async () => {
    const { clock, loop, runsAt } = loopWith({ periodMs: 3_600_000, firstRun: 'after-period' });
    loop.start();
    await clock.advance(10_000);
    loop.setPeriodMs(5_000);
    await clock.advance(12_000);
    assert.deepEqual(runsAt, [15_000, 20_000]);
    loop.setPeriodMs(60_000);
    await clock.advance(60_000);
    assert.deepEqual(runsAt, [15_000, 20_000, 82_000]);
    await loop.stop();
  });

  it('keeps a pending backoff retry when the period changes', async () => {
    const outcomes = [false];
    const { clock, loop, runsAt } = loopWith({
      backoff: { initialMs: 500, maxMs: 4000 },
      run: () => {
        runsAt.push(clock.now());
        return outcomes.shift() === false ? Promise.reject(new Error('down')) : Promise.resolve();
      },
    });
    loop.start();
    await settle();
    loop.setPeriodMs(60_000);
    await clock.advance(500);
    assert.deepEqual(runsAt, [0, 500], 'the retry stays at 500 ms');
    await clock.advance(60_000);
    assert.deepEqual(runsAt, [0, 500, 60_500], 'the next period is the new one');
    await loop.stop();
  });

  it('never overlaps runs: a run longer than the period delays the next one', async () => {
    const { clock, loop, probe } = overlapProbe((fake) => new Promise<void>((resolve) => fake.setTimeout(resolve, 15_000)));
    loop.start();
    await clock.advance(60_000);
    assert.deepEqual(probe.startsAt, [0, 25_000, 50_000]);
    assert.equal(probe.maxActive, 1);
    const stopping = loop.stop();
    await clock.advance(15_000);
    await stopping;
  });

  it('waits in stop() for the run in flight, then schedules nothing', async () => {
    let release: () => void = () => undefined;
    const { clock, loop, probe } = overlapProbe(() => new Promise<void>((resolve) => (release = resolve)));
    loop.start();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false, 'stop() resolved while a run was in flight');
    release();
    await stopping;
    assert.equal(probe.active, 0, 'the run had finished when stop() resolved');
    assert.equal(clock.pendingTimers(), 0);
    loop.setPeriodMs(1);
    assert.equal(clock.pendingTimers(), 0, 'a period change after stop schedules nothing');
  });

  it('runs once on demand before start without scheduling, and starts without overlapping that run', async () => {
    let release: () => void = () => undefined;
    const { clock, loop, probe } = overlapProbe(() => new Promise<void>((resolve) => (release = resolve)));
    const early = loop.runNow();
    release();
    assert.equal(await early, true);
    assert.equal(clock.pendingTimers(), 0, 'nothing scheduled before start');
    const second = loop.runNow();
    loop.start();
    release();
    await second;
    await clock.advance(10_000);
    release();
    await settle();
    assert.deepEqual(probe.startsAt, [0, 0, 10_000]);
    assert.equal(probe.maxActive, 1);
    await loop.stop();
  });
});
