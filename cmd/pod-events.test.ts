import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../util/pod-key.js';
import { enqueuer } from './pod-events.js';
import type { RemovedPodFilter } from './removed-pods.js';
import type { SyncPreempter } from './sync-preemption.js';

function recordingQueue(): { queue: ReconcileQueue; added: string[] } {
  const added: string[] = [];
  const queue = {
    enqueue: (ref: PodKey, reason: string) => {
      added.push(`enqueue ${ref.uid} ${reason}`);
      return Promise.resolve();
    },
    enqueueIfIdle: (ref: PodKey, reason: string) => {
      added.push(`enqueueIfIdle ${ref.uid} ${reason}`);
      return Promise.resolve();
    },
  } as Partial<ReconcileQueue> as ReconcileQueue;
  return { queue, added };
}

describe('enqueuer', () => {
  const removedUids = new Set(['done']);
  const removed: RemovedPodFilter = { bind: () => undefined, nothingLeftToSync: (key) => removedUids.has(key.uid) };
  const key = (uid: string): PodKey => ({ uid, namespace: 'ns', name: uid });

  it('enqueues nothing for a pod whose work is done, and asks no preemption', () => {
    const { queue, added } = recordingQueue();
    const preempted: string[] = [];
    const preempter: SyncPreempter = { bind: () => undefined, onEvent: (k) => preempted.push(k.uid) };
    const onPod = enqueuer(queue, pino({ level: 'silent' }), preempter, removed);
    onPod(key('done'), 'deleted');
    onPod(key('live'), 'deleted');
    onPod(key('live'), 'status-updated');
    assert.deepEqual(added, ['enqueue live deleted', 'enqueueIfIdle live status-updated']);
    assert.deepEqual(preempted, ['live']);
  });
});
