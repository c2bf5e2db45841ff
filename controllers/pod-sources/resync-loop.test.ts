import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { startResyncLoop } from './resync-loop.js';

const logger = pino({ level: 'silent' });

describe('resync loop', () => {
  it('resyncs every period plus up to 10% jitter', async () => {
    const clock = createFakeClock();
    let resyncs = 0;
    const loop = startResyncLoop({ resyncAll: () => resyncs++, periodMs: 60_000, clock, logger, random: () => 0.5 });
    await clock.advance(59_999);
    assert.equal(resyncs, 0);
    await clock.advance(1);
    assert.equal(resyncs, 1);
    await clock.advance(62_999);
    assert.equal(resyncs, 1, 'the next one is jittered by 5%');
    await clock.advance(1);
    assert.equal(resyncs, 2);
    loop.stop();
  });

  it('applies a new period from now, sooner or later than the old schedule', async () => {
    const clock = createFakeClock();
    let resyncs = 0;
    const loop = startResyncLoop({ resyncAll: () => resyncs++, periodMs: 3_600_000, clock, logger, random: () => 0 });
    await clock.advance(10_000);
    loop.setPeriodMs(5_000);
    await clock.advance(5_000);
    assert.equal(resyncs, 1);
    await clock.advance(5_000);
    assert.equal(resyncs, 2);
    loop.setPeriodMs(60_000);
    await clock.advance(59_999);
    assert.equal(resyncs, 2);
    await clock.advance(1);
    assert.equal(resyncs, 3);
    loop.stop();
  });

  it('never resyncs after stop, even when the period changes', async () => {
    const clock = createFakeClock();
    let resyncs = 0;
    const loop = startResyncLoop({ resyncAll: () => resyncs++, periodMs: 1_000, clock, logger });
    loop.stop();
    loop.setPeriodMs(500);
    await clock.advance(10_000);
    assert.equal(resyncs, 0);
    assert.equal(clock.pendingTimers(), 0);
  });
});
