import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, RestartBackoff } from './restart-backoff.js';

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
