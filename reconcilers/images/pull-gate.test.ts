import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { PullGate } from './pull-gate.js';

describe('PullGate', () => {
  it('runs one pull at a time when serialized, the rest waiting in arrival order', async () => {
    const gate = new PullGate({ concurrency: 1, qps: 0, burst: 0 }, createFakeClock());
    const order: string[] = [];
    const first = await gate.acquire();
    const second = gate.acquire().then((release) => { order.push('second'); return release; });
    const third = gate.acquire().then((release) => { order.push('third'); return release; });
    await settle();
    assert.deepEqual(gate.counts, { active: 1, waiting: 2 });
    assert.deepEqual(order, []);
    first();
    (await second)();
    (await third)();
    assert.deepEqual(order, ['second', 'third']);
    assert.deepEqual(gate.counts, { active: 0, waiting: 0 });
  });

  it('runs up to the parallel limit, and without a limit runs every pull at once', async () => {
    const limited = new PullGate({ concurrency: 2, qps: 0, burst: 0 }, createFakeClock());
    await limited.acquire();
    await limited.acquire();
    void limited.acquire();
    await settle();
    assert.deepEqual(limited.counts, { active: 2, waiting: 1 });
    const unlimited = new PullGate({ concurrency: null, qps: 0, burst: 0 }, createFakeClock());
    for (let i = 0; i < 20; i += 1) await unlimited.acquire();
    assert.deepEqual(unlimited.counts, { active: 20, waiting: 0 });
  });

  it('lets waiting pulls start at once when the limit is raised live', async () => {
    const gate = new PullGate({ concurrency: 1, qps: 0, burst: 0 }, createFakeClock());
    await gate.acquire();
    const waiting = [gate.acquire(), gate.acquire()];
    await settle();
    assert.deepEqual(gate.counts, { active: 1, waiting: 2 });
    gate.setLimits({ concurrency: 3, qps: 0, burst: 0 });
    await Promise.all(waiting);
    assert.deepEqual(gate.counts, { active: 3, waiting: 0 });
  });

  it('frees a slot once however often its release is called', async () => {
    const gate = new PullGate({ concurrency: 2, qps: 0, burst: 0 }, createFakeClock());
    const release = await gate.acquire();
    await gate.acquire();
    release();
    release();
    assert.deepEqual(gate.counts, { active: 1, waiting: 0 });
  });

  it('gives up waiting when the signal aborts, without taking a slot', async () => {
    const gate = new PullGate({ concurrency: 1, qps: 0, burst: 0 }, createFakeClock());
    const held = await gate.acquire();
    const controller = new AbortController();
    const waiting = gate.acquire(controller.signal);
    controller.abort(new Error('lost the lock'));
    await assert.rejects(waiting, /lost the lock/);
    held();
    assert.deepEqual(gate.counts, { active: 0, waiting: 0 });
  });

  it('hands out burst tokens at once, then qps per second (the registry pull rate)', async () => {
    const clock = createFakeClock();
    const gate = new PullGate({ concurrency: null, qps: 2, burst: 3 }, clock);
    const takes = (): boolean[] => [gate.tryTakeToken(), gate.tryTakeToken(), gate.tryTakeToken(), gate.tryTakeToken()];
    assert.deepEqual(takes(), [true, true, true, false]);
    await clock.advance(500);
    assert.deepEqual([gate.tryTakeToken(), gate.tryTakeToken()], [true, false]);
    await clock.advance(10_000);
    assert.deepEqual(takes(), [true, true, true, false], 'the bucket holds at most burst');
  });

  it('never limits the rate when qps is 0', () => {
    const gate = new PullGate({ concurrency: null, qps: 0, burst: 0 }, createFakeClock());
    for (let i = 0; i < 100; i += 1) assert.equal(gate.tryTakeToken(), true);
  });
});
