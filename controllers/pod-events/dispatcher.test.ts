import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { PodLifecycleRecord } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import type { PodEvent } from '../../reconcilers/model/pod-event.js';
import type { PodKey } from '../../util/pod-key.js';
import { PodEventBus, PodEventBusAttachedError } from './bus.js';
import { RESTART_WHY } from './decide.js';
import { PodEventDispatcher, type PodEventDispatcherOptions } from './dispatcher.js';

const key = (uid: string): PodKey => ({ uid, namespace: 'ns', name: uid });

/** A queue that records what it was asked; `running` UIDs have a run in flight. */
function recordingQueue(running: ReadonlySet<string> = new Set()): { queue: PodEventDispatcherOptions['queue']; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    queue: {
      enqueue: (ref, reason) => {
        calls.push(`enqueue ${ref.uid} ${reason}`);
        return Promise.resolve();
      },
      enqueueIfIdle: (ref, reason) => {
        calls.push(`enqueueIfIdle ${ref.uid} ${reason}`);
        return Promise.resolve();
      },
      resync: (ref, reason) => {
        calls.push(`resync ${ref.uid} ${reason}`);
        return Promise.resolve();
      },
      preempt: (uid, why) => {
        calls.push(`preempt ${uid} (${why})`);
        return running.has(uid);
      },
      runInFlight: (uid) => running.has(uid),
    },
  };
}

function dispatcher(parts: { queue: PodEventDispatcherOptions['queue']; pods?: Record<string, V1Pod>; records?: Record<string, PodLifecycleRecord>; newest?: (pod: V1Pod) => boolean }): PodEventDispatcher {
  const pods = parts.pods ?? {};
  const records = parts.records ?? {};
  return new PodEventDispatcher({
    queue: parts.queue,
    store: { get: (uid) => pods[uid], synced: () => true },
    lifecycle: {
      get: (uid) => records[uid],
      requestRestart: (k) => {
        const record = records[k.uid];
        if (record !== undefined) records[k.uid] = { ...record, restartRequested: true };
        return record !== undefined;
      },
    },
    evictions: { of: () => undefined },
    status: { holdsNewest: parts.newest ?? (() => false) },
    logger: pino({ level: 'silent' }),
  });
}

describe('PodEventDispatcher against the views it reads', () => {
  it('enqueues with the reason the queue has always recorded, and only when idle for a status-only update', () => {
    const { queue, calls } = recordingQueue();
    const d = dispatcher({ queue, pods: { a: { metadata: { uid: 'a' } } } });
    d.dispatch({ kind: 'source-changed', key: key('a'), source: 'api', change: 'added' });
    d.dispatch({ kind: 'runtime-changed', key: key('a'), change: 'changed' });
    d.dispatch({ kind: 'probe-result', key: key('a'), probe: 'startup', result: 'succeeded' });
    d.dispatch({ kind: 'status-updated', key: key('a'), readinessGatesDisagree: false, evicted: false });
    assert.deepEqual(calls, ['enqueue a added', 'enqueue a runtime: containers changed', 'enqueue a startup probe succeeded', 'enqueueIfIdle a status-updated']);
  });

  it("drops the echo of the status manager's newest write, and nothing else", () => {
    const { queue, calls } = recordingQueue();
    const pod: V1Pod = { metadata: { uid: 'a' }, status: { phase: 'Running' } };
    const d = dispatcher({ queue, pods: { a: pod }, newest: (p) => p.status?.phase === 'Running' });
    d.dispatch({ kind: 'status-updated', key: key('a'), readinessGatesDisagree: false, evicted: false });
    d.dispatch({ kind: 'status-updated', key: key('other'), readinessGatesDisagree: false, evicted: false });
    d.dispatch({ kind: 'status-updated', key: key('a'), readinessGatesDisagree: true, evicted: false });
    assert.deepEqual(calls, ['enqueueIfIdle other status-updated', 'enqueue a readiness-gate-changed']);
  });

  it('cancels the sync in flight of a pod that started terminating, then enqueues it', () => {
    const { queue, calls } = recordingQueue(new Set(['a']));
    const deleted: V1Pod = { metadata: { uid: 'a', deletionTimestamp: new Date() } };
    const d = dispatcher({ queue, pods: { a: deleted }, records: { a: { key: key('a'), phase: 'syncing' } } });
    d.dispatch({ kind: 'source-changed', key: key('a'), source: 'api', change: 'updated' });
    assert.equal(calls.length, 2);
    assert.match(calls[0] ?? '', /^preempt a \(/);
    assert.equal(calls[1], 'enqueue a updated');
  });

  it('asks nothing for a pod removed here and gone from every source', () => {
    const { queue, calls } = recordingQueue();
    const d = dispatcher({ queue, records: { gone: { key: key('gone'), phase: 'terminated', removedAt: 1, objectDeletedAt: 2 } } });
    d.dispatch({ kind: 'source-changed', key: key('gone'), source: 'api', change: 'deleted' });
    d.dispatch({ kind: 'runtime-changed', key: key('gone'), change: 'vanished' });
    assert.deepEqual(calls, []);
  });

  it('flags the restart of a UID added again, cancelling its sync in flight, and enqueues it; a UID it does not know is only enqueued', () => {
    const { queue, calls } = recordingQueue(new Set(['a']));
    const records: Record<string, PodLifecycleRecord> = { a: { key: key('a'), phase: 'syncing' }, b: { key: key('b'), phase: 'terminating', terminatingAt: 1 } };
    const pods = { a: { metadata: { uid: 'a' } }, b: { metadata: { uid: 'b' } }, c: { metadata: { uid: 'c' } } };
    const d = dispatcher({ queue, pods, records });
    d.dispatch({ kind: 'source-changed', key: key('a'), source: 'file', change: 'added' });
    d.dispatch({ kind: 'source-changed', key: key('b'), source: 'file', change: 'added' });
    d.dispatch({ kind: 'source-changed', key: key('c'), source: 'file', change: 'added' });
    assert.equal(records.a?.restartRequested, true);
    assert.equal(records.b?.restartRequested, true);
    assert.deepEqual(calls, [`preempt a (${RESTART_WHY})`, 'enqueue a added', 'enqueue b added', 'enqueue c added'], 'only a sync is cancelled; a stop in flight goes on');
  });

  it("hands a resync to the queue's resync, and a resync of a pod whose sync became moot to preempt-and-enqueue", () => {
    const { queue, calls } = recordingQueue(new Set(['b']));
    const deleted: V1Pod = { metadata: { uid: 'b', deletionTimestamp: new Date() } };
    const d = dispatcher({ queue, pods: { a: { metadata: { uid: 'a' } }, b: deleted }, records: { b: { key: key('b'), phase: 'syncing' } } });
    d.dispatch({ kind: 'resync', key: key('a') });
    d.dispatch({ kind: 'resync', key: key('b') });
    assert.equal(calls[0], 'resync a resync');
    assert.match(calls[1] ?? '', /^preempt b \(/);
    assert.equal(calls[2], 'enqueue b resync');
  });

  it('logs an enqueue that fails and goes on', async () => {
    const calls: string[] = [];
    const { queue } = recordingQueue();
    const d = dispatcher({ queue: { ...queue, resync: (ref) => { calls.push(ref.uid); return Promise.reject(new Error('redis down')); } }, pods: { a: { metadata: { uid: 'a' } }, b: { metadata: { uid: 'b' } } } });
    d.dispatch({ kind: 'resync', key: key('a') });
    d.dispatch({ kind: 'resync', key: key('b') });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls, ['a', 'b']);
  });
});

describe('PodEventBus', () => {
  it('hands over the events emitted before its dispatcher attached, in order, then every new one at once', () => {
    const bus = new PodEventBus();
    const seen: string[] = [];
    const event = (uid: string): PodEvent => ({ kind: 'resync', key: key(uid) });
    bus.emit(event('a'));
    bus.emit(event('b'));
    bus.attach((e) => seen.push(e.key.uid));
    bus.emit(event('c'));
    assert.deepEqual(seen, ['a', 'b', 'c']);
  });

  it('takes one dispatcher only', () => {
    const bus = new PodEventBus();
    bus.attach(() => undefined);
    assert.throws(() => { bus.attach(() => undefined); }, PodEventBusAttachedError);
  });
});
