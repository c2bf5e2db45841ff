import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crashLoopBackOffPolicy, formatDuration, RestartBackoff } from './restart-backoff.js';

describe('RestartBackoff', () => {
  it('lets the first restart through, then waits 10 s, 20 s, … up to 5 min after each exit', () => {
    const b = new RestartBackoff();
    let exit = 0;
    assert.equal(b.blockedUntil('k', exit, exit), undefined);
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      b.next('k', exit);
      exit += 1000; // the container ran a second, then exited again
      const blocked = b.blockedUntil('k', exit, exit);
      waits.push(blocked?.backoffMs ?? 0);
      exit = blocked?.untilMs ?? exit;
    }
    assert.deepEqual(waits, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });

  it('is no longer blocked once the backoff since the exit has passed', () => {
    const b = new RestartBackoff();
    b.next('k', 0);
    assert.ok(b.blockedUntil('k', 5_000, 14_000));
    assert.equal(b.blockedUntil('k', 5_000, 15_000), undefined);
  });

  it('starts over after the container ran for more than 10 minutes', () => {
    const b = new RestartBackoff();
    b.next('k', 0);
    b.next('k', 1);
    b.next('k', 2);
    const exit = 2 + 10 * 60_000 + 1;
    assert.equal(b.blockedUntil('k', exit, exit), undefined);
    b.next('k', exit);
    assert.equal(b.blockedUntil('k', exit, exit)?.backoffMs, 10_000);
  });

  it('follows crashLoopBackOff.maxContainerRestartPeriod: a maximum under 10 s is also the first wait', () => {
    assert.deepEqual(crashLoopBackOffPolicy(2000), { initialMs: 2000, maxMs: 2000 });
    assert.deepEqual(crashLoopBackOffPolicy(60_000), { initialMs: 10_000, maxMs: 60_000 });
    const waits = (b: RestartBackoff): number[] => {
      let exit = 0;
      const seen: number[] = [];
      for (let i = 0; i < 5; i++) {
        b.next('k', exit);
        exit += 1000;
        const blocked = b.blockedUntil('k', exit, exit);
        seen.push(blocked?.backoffMs ?? 0);
        exit = blocked?.untilMs ?? exit;
      }
      return seen;
    };
    assert.deepEqual(waits(new RestartBackoff(crashLoopBackOffPolicy(30_000))), [10_000, 20_000, 30_000, 30_000, 30_000]);
    assert.deepEqual(waits(new RestartBackoff(crashLoopBackOffPolicy(2000))), [2000, 2000, 2000, 2000, 2000]);
  });

  it('cuts running waits to a lower maximum set live, and keeps the 10-minute reset whatever the maximum', () => {
    const b = new RestartBackoff();
    for (let i = 0; i < 6; i++) b.next('k', i * 1000);
    assert.equal(b.blockedUntil('k', 6000, 6000)?.backoffMs, 300_000);
    b.setPolicy(crashLoopBackOffPolicy(5000));
    assert.equal(b.blockedUntil('k', 6000, 6000)?.backoffMs, 5000);
    b.next('k', 7000);
    assert.equal(b.blockedUntil('k', 7000, 7000)?.backoffMs, 5000, 'doubling stays capped at the new maximum');
    // The reset window is 10 min whatever the maximum (not flowcontrol's 2 × maximum).
    const slow = new RestartBackoff(crashLoopBackOffPolicy(30_000));
    for (let i = 0; i < 3; i++) slow.next('k', i * 1000);
    const twoMinutesLater = 2000 + 120_000;
    assert.equal(slow.blockedUntil('k', twoMinutesLater, twoMinutesLater)?.backoffMs, 30_000, 'not reset after 2 × maximum');
    const tenMinutesLater = 2000 + 600_001;
    assert.equal(slow.blockedUntil('k', tenMinutesLater, tenMinutesLater), undefined, 'reset after 10 min');
  });

  it('forgets a pod by prefix', () => {
    const b = new RestartBackoff();
    b.next('uid-1/a', 0);
    b.next('uid-2/a', 0);
    b.forgetPrefix('uid-1/');
    assert.equal(b.size, 1);
  });

  it('formats durations the way Go prints them', () => {
    assert.equal(formatDuration(10_000), '10s');
    assert.equal(formatDuration(80_000), '1m20s');
    assert.equal(formatDuration(300_000), '5m0s');
  });
});
