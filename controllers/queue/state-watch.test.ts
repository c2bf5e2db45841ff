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
