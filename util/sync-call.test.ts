import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settleSync } from './sync-call.js';

describe('settleSync', () => {
  it('resolves to the result and turns a throw into a rejection, wrapping a non-Error', async () => {
    assert.equal(await settleSync(() => 42), 42);
    const failure = new Error('EBUSY');
    await assert.rejects(settleSync(() => { throw failure; }), (e) => e === failure);
    await assert.rejects(settleSync(() => { throw 'text'; }), /text/); // eslint-disable-line @typescript-eslint/only-throw-error
  });
});
