/**
 * The path of every pod event (API source, static pods, PLEG, resync, eviction) to the reconcile
 * queue: what an event preempts, what it enqueues, and what it leaves to housekeeping.
 */
import type { Logger } from 'pino';
import { STATUS_ONLY_UPDATE } from '../controllers/pod-sources/api-source.js';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../util/pod-key.js';
import { lateRemovedPodFilter, type RemovedPodFilter, type RemovedPodView } from './removed-pods.js';
import { lateStatusEchoFilter, type StatusEchoFilter, type StatusEchoView } from './status-echoes.js';
import { lateSyncPreempter, type PreemptionView, type SyncPreempter } from './sync-preemption.js';

/**
 * Enqueue without awaiting: a failure (Redis down) is logged; the resync after reconnect repairs it.
 * An event that makes the pod's sync in flight moot (it is being deleted) cancels that sync first.
 * An event about a pod whose work is done (removed from the runtime and its object deleted here:
 * the echoes of its deletion) enqueues nothing: the housekeeping forgets it (`removed-pods.ts`).
 * Nor does the echo of nodelet's own status write (`status-echoes.ts`).
 */
export function enqueuer(queue: ReconcileQueue, logger: Logger, filters: { preempter: SyncPreempter; removed: RemovedPodFilter; echoes: StatusEchoFilter }): (key: PodKey, reason: string) => void {
  const { preempter, removed, echoes } = filters;
  return (key, reason) => {
    if (removed.nothingLeftToSync(key)) return;
    if (reason === STATUS_ONLY_UPDATE && echoes.isOwnEcho(key)) return;
    // A status-only change never cuts a pending delay (a failure backoff) short.
    if (reason !== STATUS_ONLY_UPDATE) preempter.onEvent(key);
    const added = reason === STATUS_ONLY_UPDATE ? queue.enqueueIfIdle(key, reason) : queue.enqueue(key, reason);
    added.catch((error: unknown) => {
      logger.warn({ err: error, podUID: key.uid, reason }, 'enqueue failed; the next resync retries');
    });
  };
}

/** The event path and what its filters read, handed over by `bind` once it exists. */
export interface PodEventPath {
  readonly enqueue: (key: PodKey, reason: string) => void;
  bind(view: PreemptionView & RemovedPodView & StatusEchoView): void;
}

/**
 * The event path, built before the store and the pod machinery exist (the pod sources and PLEG
 * need it to be made), so its filters read their view once `bind` gives it.
 */
export function createPodEventPath(queue: ReconcileQueue, logger: Logger): PodEventPath {
  const preempter = lateSyncPreempter(queue, logger.child({ component: 'reconcile-queue' }));
  const removed = lateRemovedPodFilter(queue);
  const echoes = lateStatusEchoFilter();
  return {
    enqueue: enqueuer(queue, logger, { preempter, removed, echoes }),
    bind: (view) => {
      preempter.bind(view);
      removed.bind(view);
      echoes.bind(view);
    },
  };
}
