import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { ResyncWatcher, type ResyncCause, type SentinelStore } from './state-watch.js';

const logger = pino({ level: 'silent' });

/** An in-memory sentinel and connection: the test flips `ready`, deletes the key, or breaks Redis. */
class FakeStore implements SentinelStore {
  ready: boolean;
  exists = false;
  broken = false;
  private readonly readyListeners = new Set<() => void>();

  constructor(ready: boolean) {
    this.ready = ready;
  }

  isReady(): boolean {
    return this.ready;
  }

  onReady(listener: () => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  create(): Promise<void> {
    if (this.broken) return Promise.reject(new Error('connection closed'));
    this.exists = true;
    return Promise.resolve();
  }

  /** Refreshes Redis was asked for (each one command). */
  refreshes = 0;

  refresh(): Promise<boolean> {
    this.refreshes += 1;
    if (this.broken) return Promise.reject(new Error('connection closed'));
    return Promise.resolve(this.exists);
  }

  remove(): Promise<void> {
    this.exists = false;
    return Promise.resolve();
  }

  becomeReady(): void {
    this.ready = true;
    for (const listener of this.readyListeners) listener();
  }

  get listenerCount(): number {
    return this.readyListeners.size;
  }
}

function setup(options: { ready: boolean }) {
  const store = new FakeStore(options.ready);
  const clock = createFakeClock();
  const watcher = new ResyncWatcher({ store, intervalMs: 1_000, logger, clock });
  const causes: ResyncCause[] = [];
  watcher.onResync((cause) => {
    causes.push(cause);
  });
  return { store, clock, watcher, causes };
}

void describe('ResyncWatcher', () => {
  void it('creates the sentinel on the initial connect and asks for nothing', async () => {
    const { store, clock, watcher, causes } = setup({ ready: false });
    watcher.start();
    store.becomeReady();
    await clock.advance(3_500);
    assert.equal(store.exists, true);
    assert.deepEqual(causes, []);
  });

  void it('creates the sentinel at once when the connection is already ready', async () => {
    const { store, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    assert.equal(store.exists, true);
    assert.deepEqual(causes, []);
  });

  void it('reports state-lost once when the sentinel vanished, and recreates it', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    store.exists = false; // FLUSHALL
    await clock.advance(1_000);
    assert.deepEqual(causes, ['state-lost']);
    assert.equal(store.exists, true);
    await clock.advance(3_000);
    assert.deepEqual(causes, ['state-lost']);
  });

  void it('reports reconnected when the connection is ready again and the sentinel survived', async () => {
    const { store, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    store.becomeReady();
    await watcher.settled();
    assert.deepEqual(causes, ['reconnected']);
  });

  void it('reports one state-lost when Redis restarted empty, not a reconnect as well', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    store.exists = false;
    store.becomeReady();
    await clock.advance(1_000); // the tick right after finds the recreated sentinel
    assert.deepEqual(causes, ['state-lost']);
  });

  void it('still reports a reconnect when the check after it fails, and keeps checking on later ticks', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    store.broken = true;
    store.becomeReady();
    await watcher.settled();
    assert.deepEqual(causes, ['reconnected']);
    store.broken = false;
    store.exists = false;
    await clock.advance(1_000);
    assert.deepEqual(causes, ['reconnected', 'state-lost']);
  });

  void it('keeps calling the other listeners when one throws or rejects', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.onResync(() => {
      throw new Error('boom');
    });
    watcher.onResync(() => Promise.reject(new Error('async boom')));
    const late: ResyncCause[] = [];
    watcher.onResync((cause) => {
      late.push(cause);
    });
    watcher.start();
    await watcher.settled();
    store.exists = false;
    await clock.advance(1_000);
    await settle();
    assert.deepEqual(causes, ['state-lost']);
    assert.deepEqual(late, ['state-lost']);
  });

  void it('stops calling a listener once it unsubscribed', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    const gone: ResyncCause[] = [];
    const unsubscribe = watcher.onResync((cause) => {
      gone.push(cause);
    });
    unsubscribe();
    watcher.start();
    await watcher.settled();
    store.exists = false;
    await clock.advance(1_000);
    assert.deepEqual(causes, ['state-lost']);
    assert.deepEqual(gone, []);
  });

  void it('stops ticking, stops listening and deletes its sentinel when stopped', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    await watcher.stop();
    assert.equal(store.exists, false);
    assert.equal(store.listenerCount, 0);
    assert.equal(clock.pendingTimers(), 0);
    await clock.advance(5_000);
    assert.deepEqual(causes, []);
  });

  void it('answers a probe with one refresh, and skips its own tick while probes keep it fresh', async () => {
    const { store, clock, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    // A health sample every 200 ms for 5 intervals: one command each, no tick of its own on top.
    for (let i = 0; i < 25; i += 1) {
      await watcher.probe();
      await clock.advance(200);
    }
    assert.equal(store.refreshes, 25);
    // Without probes the tick checks again, once per interval.
    await clock.advance(3_000);
    assert.equal(store.refreshes, 28);
    assert.deepEqual(causes, []);
  });

  void it('reports a flush found by a probe, and rejects a probe Redis did not answer', async () => {
    const { store, watcher, causes } = setup({ ready: true });
    watcher.start();
    await watcher.settled();
    store.exists = false;
    await watcher.probe();
    assert.deepEqual(causes, ['state-lost']);
    assert.equal(store.exists, true);
    store.broken = true;
    await assert.rejects(watcher.probe(), /connection closed/);
    await watcher.stop();
    await assert.rejects(watcher.probe(), /no longer watched/);
  });
});

void describe('ResyncWatcher after failed requests', () => {
  /** A started watcher whose periodic check is far away and whose backoff has no jitter (1 s, 2 s, 4 s, … 10 s). */
  async function quiet() {
    const store = new FakeStore(true);
    const clock = createFakeClock();
    const watcher = new ResyncWatcher({ store, intervalMs: 600_000, logger, clock, random: () => 0 });
    const causes: ResyncCause[] = [];
    watcher.onResync((cause) => {
      causes.push(cause);
    });
    watcher.start();
    await watcher.settled();
    return { store, clock, watcher, causes };
  }

  void it('asks for one resync a second after requests failed, however many, once Redis answers', async () => {
    const { store, clock, watcher, causes } = await quiet();
    const refreshes = store.refreshes;
    for (let i = 0; i < 5; i += 1) watcher.requestFailed();
    await clock.advance(999);
    assert.deepEqual(causes, []);
    await clock.advance(1);
    await watcher.settled();
    assert.deepEqual(causes, ['requests-failed']);
    assert.equal(store.refreshes - refreshes, 1, 'one sentinel check proved Redis answers');
    await clock.advance(60_000);
    assert.deepEqual(causes, ['requests-failed'], 'nothing more without another failure');
    await watcher.stop();
  });

  void it('waits longer each time Redis still refuses, up to 10 s, and fires once it answers', async () => {
    const { store, clock, watcher, causes } = await quiet();
    store.broken = true;
    watcher.requestFailed();
    const refreshesBefore = store.refreshes;
    await clock.advance(1_000 + 2_000 + 4_000 + 8_000 + 10_000 + 10_000);
    assert.equal(store.refreshes - refreshesBefore, 6, 'checks at 1, 3, 7, 15, 25 and 35 s');
    assert.deepEqual(causes, []);
    store.broken = false;
    await clock.advance(10_000);
    await watcher.settled();
    assert.deepEqual(causes, ['requests-failed']);
    await watcher.stop();
  });

  void it('reports state-lost instead when the sentinel is gone too, starts the backoff over after a success, and stops its timer', async () => {
    const { store, clock, watcher, causes } = await quiet();
    store.exists = false;
    watcher.requestFailed();
    await clock.advance(1_000);
    await watcher.settled();
    assert.deepEqual(causes, ['state-lost']);
    watcher.requestSucceeded();
    watcher.requestFailed(); // attempt 1 again: 1 s, not 2 s
    await clock.advance(1_000);
    await watcher.settled();
    assert.deepEqual(causes, ['state-lost', 'requests-failed']);
    watcher.requestFailed(); // attempt 2: 2 s
    await clock.advance(1_000);
    await watcher.settled();
    assert.equal(causes.length, 2, 'the second failure in a row waits 2 s');
    await watcher.stop();
    await clock.advance(5_000);
    assert.equal(causes.length, 2, 'a stopped watcher fires nothing');
  });
});
