import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../util/pod-key.js';
import { enqueuer } from './pod-events.js';
import type { RemovedPodFilter } from './removed-pods.js';
import { lateStatusEchoFilter } from './status-echoes.js';
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
    const onPod = enqueuer(queue, pino({ level: 'silent' }), { preempter, removed, echoes: lateStatusEchoFilter() });
    onPod(key('done'), 'deleted');
    onPod(key('live'), 'deleted');
    onPod(key('live'), 'status-updated');
    assert.deepEqual(added, ['enqueue live deleted', 'enqueueIfIdle live status-updated']);
    assert.deepEqual(preempted, ['live']);
  });

  it('enqueues nothing for the echo of its own status write, and every other update of the pod as before', () => {
    const { queue, added } = recordingQueue();
    const preempter: SyncPreempter = { bind: () => undefined, onEvent: () => undefined };
    const echoes = lateStatusEchoFilter();
    const onPod = enqueuer(queue, pino({ level: 'silent' }), { preempter, removed, echoes });
    onPod(key('live'), 'status-updated');
    const pod = { metadata: { uid: 'live' }, status: { phase: 'Running' } };
    echoes.bind({ store: { get: (uid) => (uid === 'live' ? pod : undefined) }, status: { holdsNewest: (p) => p.status?.phase === 'Running' } });
    onPod(key('live'), 'status-updated');
    onPod(key('live'), 'updated');
    onPod(key('live'), 'readiness-gate-changed');
    onPod(key('other'), 'status-updated');
    pod.status.phase = 'Pending';
    onPod(key('live'), 'status-updated');
    assert.deepEqual(added, [
      'enqueueIfIdle live status-updated',
      'enqueue live updated',
      'enqueue live readiness-gate-changed',
      'enqueueIfIdle other status-updated',
      'enqueueIfIdle live status-updated',
    ]);
  });
});
