import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { isTimeoutError, settlesWithin, TimeoutError, withTimeout } from './timeout.js';

const never = (): Promise<never> => new Promise<never>(() => undefined);

describe('withTimeout', () => {
  it('resolves with the work when it answers in time, and leaves no timer behind', async () => {
    const clock = createFakeClock(0);
    assert.equal(await withTimeout(Promise.resolve(7), { clock, timeoutMs: 1000, what: 'Redis' }), 7);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('rejects like the work when it fails in time', async () => {
    const clock = createFakeClock(0);
    await assert.rejects(withTimeout(Promise.reject(new Error('ECONNREFUSED')), { clock, timeoutMs: 1000, what: 'Redis' }), /ECONNREFUSED/);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('rejects with a TimeoutError naming what hung once the limit passes, not before', async () => {
    const clock = createFakeClock(0);
    const seen: { err?: unknown } = {};
    void withTimeout(never(), { clock, timeoutMs: 1000, what: 'Redis' }).catch((err: unknown) => (seen.err = err));
    await clock.advance(999);
    assert.equal('err' in seen, false, 'rejected before the limit');
    await clock.advance(1);
    const outcome = seen.err;
    assert.ok(isTimeoutError(outcome));
    assert.equal(outcome.what, 'Redis');
    assert.equal(outcome.timeoutMs, 1000);
    assert.equal(outcome.message, 'Redis did not answer within 1000 ms');
    assert.equal(clock.pendingTimers(), 0);
  });

  it('is told apart from other errors by its predicate', () => {
    assert.equal(isTimeoutError(new TimeoutError('x', 1)), true);
    assert.equal(isTimeoutError(new Error('x did not answer within 1 ms')), false);
  });
});

describe('settlesWithin', () => {
  it('is true when the work resolves or rejects in time', async () => {
    const clock = createFakeClock(0);
    assert.equal(await settlesWithin(Promise.resolve('done'), { clock, timeoutMs: 10 }), true);
    assert.equal(await settlesWithin(Promise.reject(new Error('failed')), { clock, timeoutMs: 10 }), true);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('is false once the limit passes first', async () => {
    const clock = createFakeClock(0);
    let result: boolean | undefined;
    void settlesWithin(never(), { clock, timeoutMs: 500 }).then((r) => (result = r));
    await clock.advance(499);
    assert.equal(result, undefined);
    await clock.advance(1);
    assert.equal(result, false);
    assert.equal(clock.pendingTimers(), 0);
  });
});
