import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunSlots } from './run-slots.js';

/** A run the test ends by hand. */
function gate(): { readonly promise: Promise<void>; readonly open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RunSlots (one concurrency budget for jobs and job-less runs)', () => {
  it('runs at most the capacity at once, the rest in request order', async () => {
    const slots = new RunSlots(2);
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const runs = gates.map((g, i) => slots.run(async () => { started.push(i); await g.promise; }));
    await turn();
    assert.deepEqual(started, [0, 1]);
    gates[1]!.open();
    await turn();
    assert.deepEqual(started, [0, 1, 2]);
    assert.equal(slots.running, 2);
    for (const g of gates) g.open();
    await Promise.all(runs);
    assert.deepEqual(started, [0, 1, 2, 3]);
    assert.equal(slots.running, 0);
  });

  it('gives the slot back when a run throws', async () => {
    const slots = new RunSlots(1);
    await assert.rejects(slots.run(() => Promise.reject(new Error('failed run'))));
    assert.equal(await slots.run(() => Promise.resolve('next')), 'next');
  });

  it('starts waiting runs when the capacity grows, and lets running ones finish when it shrinks', async () => {
    const slots = new RunSlots(1);
    const gates = [gate(), gate(), gate()];
    const started: number[] = [];
    const runs = gates.map((g, i) => slots.run(async () => { started.push(i); await g.promise; }));
    await turn();
    slots.setCapacity(3);
    await turn();
    assert.deepEqual(started, [0, 1, 2]);
    slots.setCapacity(1);
    const late = slots.run(() => { started.push(3); return Promise.resolve(); });
    gates[0]!.open();
    gates[1]!.open();
    await turn();
    assert.deepEqual(started, [0, 1, 2], 'still 1 running, the capacity: the late run waits');
    gates[2]!.open();
    await Promise.all([...runs, late]);
    assert.deepEqual(started, [0, 1, 2, 3]);
  });
});
