import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailureCounter, outcomeOf, planNextRun, type RunOutcome, type RunPlan } from './policy.js';
import { TerminalReconcileError } from '../../util/reconcile.js';
import { KeyedSerializer } from './runner.js';

const policy = { initialMs: 1_000, maxMs: 300_000 };

void describe('outcomeOf', () => {
  void it('treats an empty result as success', () => {
    assert.deepEqual(outcomeOf({ value: {} }), { kind: 'success' });
  });

  void it('treats a positive requeueAfterMs as a requeue after that delay', () => {
    assert.deepEqual(outcomeOf({ value: { requeueAfterMs: 2_500 } }), { kind: 'requeue', afterMs: 2_500 });
  });

  void it('treats a zero, negative or non-finite requeueAfterMs as plain success', () => {
    for (const requeueAfterMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.deepEqual(outcomeOf({ value: { requeueAfterMs } }), { kind: 'success' }, `requeueAfterMs ${requeueAfterMs}`);
    }
  });

  void it('treats a thrown TerminalReconcileError as terminal and anything else thrown as a retryable error', () => {
    const terminal = new TerminalReconcileError('bad spec');
    assert.deepEqual(outcomeOf({ error: terminal }), { kind: 'terminal', error: terminal });
    const plain = new Error('unavailable');
    assert.deepEqual(outcomeOf({ error: plain }), { kind: 'error', error: plain });
    assert.deepEqual(outcomeOf({ error: 'a string' }), { kind: 'error', error: 'a string' });
  });

  void it('treats a preempted run that threw as preempted whatever it threw, and one that finished anyway by its result', () => {
    assert.deepEqual(outcomeOf({ error: new Error('aborted') }, true), { kind: 'preempted' });
    assert.deepEqual(outcomeOf({ error: new TerminalReconcileError('bad spec') }, true), { kind: 'preempted' });
    assert.deepEqual(outcomeOf({ value: {} }, true), { kind: 'success' });
    assert.deepEqual(outcomeOf({ value: { requeueAfterMs: 5 } }, true), { kind: 'requeue', afterMs: 5 });
  });
});

void describe('planNextRun', () => {
  const cases: { name: string; outcome: RunOutcome; failuresBefore: number; want: RunPlan }[] = [
    {
      name: 'runs a preempted job again at once, keeping the failure count as it was',
      outcome: { kind: 'preempted' },
      failuresBefore: 2,
      want: { next: { kind: 'run-again', delayMs: 0 }, failures: 2 },
    },
    {
      name: 'completes and forgets the backoff after a success',
      outcome: { kind: 'success' },
      failuresBefore: 3,
      want: { next: { kind: 'complete' }, failures: 0 },
    },
    {
      name: 'runs again after the requested delay and forgets the backoff after a requeue',
      outcome: { kind: 'requeue', afterMs: 10_000 },
      failuresBefore: 3,
      want: { next: { kind: 'run-again', delayMs: 10_000 }, failures: 0 },
    },
    {
      name: 'retries after the base delay on a first error',
      outcome: { kind: 'error', error: new Error('x') },
      failuresBefore: 0,
      want: { next: { kind: 'run-again', delayMs: 1_000 }, failures: 1 },
    },
    {
      name: 'doubles the delay with each consecutive error',
      outcome: { kind: 'error', error: new Error('x') },
      failuresBefore: 3,
      want: { next: { kind: 'run-again', delayMs: 8_000 }, failures: 4 },
    },
    {
      name: 'caps the delay at the maximum after many errors',
      outcome: { kind: 'error', error: new Error('x') },
      failuresBefore: 40,
      want: { next: { kind: 'run-again', delayMs: 300_000 }, failures: 41 },
    },
    {
      name: 'fails without retry and forgets the backoff on a terminal error',
      outcome: { kind: 'terminal', error: new TerminalReconcileError('x') },
      failuresBefore: 2,
      want: { next: { kind: 'fail' }, failures: 0 },
    },
  ];
  for (const c of cases) {
    void it(c.name, () => {
      assert.deepEqual(planNextRun(c.outcome, c.failuresBefore, policy), c.want);
    });
  }
});

void describe('FailureCounter', () => {
  void it('remembers consecutive failures per UID and forgets a UID set to zero', () => {
    const counter = new FailureCounter();
    counter.set('a', 2);
    counter.set('b', 1);
    assert.equal(counter.get('a'), 2);
    assert.equal(counter.get('b'), 1);
    assert.equal(counter.get('c'), 0);
    counter.set('a', 0);
    assert.equal(counter.get('a'), 0);
    assert.equal(counter.size, 1);
  });

  void it('forgets the UID that failed longest ago when more UIDs fail than it may remember', () => {
    const counter = new FailureCounter(2);
    counter.set('a', 1);
    counter.set('b', 1);
    counter.set('a', 2); // a failed again: now b is the oldest
    counter.set('c', 1);
    assert.equal(counter.size, 2);
    assert.equal(counter.get('b'), 0);
    assert.equal(counter.get('a'), 2);
    assert.equal(counter.get('c'), 1);
  });
});

describe('KeyedSerializer (one run per UID even when Redis forgets its deduplication keys)', () => {
  it('runs work for one key one at a time, and work for different keys side by side', async () => {
    const serializer = new KeyedSerializer();
    const log: string[] = [];
    let releaseFirst = (): void => undefined;
    const first = serializer.run('a', () => new Promise<void>((resolve) => {
      log.push('a1 start');
      releaseFirst = () => { log.push('a1 end'); resolve(); };
    }));
    const second = serializer.run('a', () => { log.push('a2 start'); return Promise.resolve(); });
    const other = serializer.run('b', () => { log.push('b start'); return Promise.resolve(); });
    await other;
    assert.deepEqual(log, ['a1 start', 'b start']);
    releaseFirst();
    await Promise.all([first, second]);
    assert.deepEqual(log, ['a1 start', 'b start', 'a1 end', 'a2 start']);
    assert.equal(serializer.size, 0);
  });

  it('runs the next work for a key after the previous one failed', async () => {
    const serializer = new KeyedSerializer();
    await assert.rejects(serializer.run('a', () => Promise.reject(new Error('boom'))));
    assert.equal(await serializer.run('a', () => Promise.resolve(42)), 42);
  });
});
