/**
 * The token bucket against a fake clock: `burst` calls pass at once, the next waits 1/qps, waiters
 * are served in order at the rate, the bucket refills to no more than `burst`, and an aborted wait
 * rejects with the signal's reason and hands its token back (golang.org/x/time/rate's semantics,
 * which client-go's token bucket limiter is).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock, settle } from '../test/doubles/fake-clock.js';
import { InvalidTokenBucketError, TokenBucket } from './token-bucket.js';

/** Starts a wait and records when it ends, in fake-clock ms since `t0`. */
function track(bucket: TokenBucket, clock: { now(): number }, t0: number, signal?: AbortSignal): { done: number | undefined; error: unknown; waited: number | undefined } {
  const state: { done: number | undefined; error: unknown; waited: number | undefined } = { done: undefined, error: undefined, waited: undefined };
  bucket.wait(signal).then(
    (waited) => {
      state.done = clock.now() - t0;
      state.waited = waited;
    },
    (error: unknown) => {
      state.error = error;
    },
  );
  return state;
}

describe('TokenBucket', () => {
  it('lets burst calls pass at once; the next waits 1/qps (50 QPS: 20 ms)', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(50, 100, clock);
    const waited = await Promise.all(Array.from({ length: 100 }, () => bucket.wait()));
    assert.deepEqual(new Set(waited), new Set([0]));
    const t0 = clock.now();
    const next = track(bucket, clock, t0);
    await clock.advance(19);
    assert.equal(next.done, undefined, 'not before 1/qps');
    await clock.advance(1);
    assert.equal(next.done, 20);
    assert.equal(next.waited, 20);
  });

  it('serves waiters in arrival order, one per 1/qps', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(10, 2, clock);
    const t0 = clock.now();
    const calls = Array.from({ length: 5 }, () => track(bucket, clock, t0));
    await clock.advance(1000);
    assert.deepEqual(calls.map((c) => c.done), [0, 0, 100, 200, 300]);
  });

  it('refills at qps up to burst and no further', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(2, 3, clock);
    for (let i = 0; i < 3; i++) assert.equal(bucket.tryAccept(), true);
    assert.equal(bucket.tryAccept(), false);
    await clock.advance(500);
    assert.equal(bucket.tryAccept(), true, 'one token after 1/qps');
    assert.equal(bucket.tryAccept(), false);
    await clock.advance(60_000);
    assert.equal([1, 2, 3, 4].filter(() => bucket.tryAccept()).length, 3, 'a long idle fills to burst only');
  });

  it('rejects a wait aborted while it waits with the signal reason, and gives its token back', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    assert.equal(await bucket.wait(), 0);
    const controller = new AbortController();
    const t0 = clock.now();
    const aborted = track(bucket, clock, t0, controller.signal);
    await clock.advance(400);
    const reason = new Error('stopped');
    controller.abort(reason);
    await settle();
    assert.equal(aborted.error, reason);
    assert.equal(aborted.done, undefined);
    assert.equal(clock.pendingTimers(), 0, 'its timer is cancelled');
    // Its reservation was handed back: the next caller waits only for the refill still due (600 ms).
    const next = track(bucket, clock, clock.now());
    await clock.advance(599);
    assert.equal(next.done, undefined);
    await clock.advance(1);
    assert.equal(next.done, 600);
  });

  it('keeps the places of waiters behind an aborted one', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(10, 1, clock);
    await bucket.wait();
    const controller = new AbortController();
    const t0 = clock.now();
    const first = track(bucket, clock, t0, controller.signal);
    const second = track(bucket, clock, t0);
    controller.abort();
    await settle();
    assert.equal((first.error as Error).name, 'AbortError');
    await clock.advance(1000);
    // The second's token was reserved after the first's: nothing to give back, it keeps 200 ms.
    assert.equal(second.done, 200);
  });

  it('rejects at once with an already aborted signal, taking no token', async () => {
    const clock = createFakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await assert.rejects(bucket.wait(controller.signal), /gone/);
    assert.equal(bucket.tryAccept(), true, 'the token is still there');
  });

  it('refuses a rate or a size that could never hand out a token', () => {
    const clock = createFakeClock();
    for (const [qps, burst] of [[0, 10], [-1, 10], [Number.NaN, 1], [5, 0], [5, 1.5]] as const) {
      assert.throws(() => new TokenBucket(qps, burst, clock), InvalidTokenBucketError, `${qps}/${burst}`);
    }
  });
});
