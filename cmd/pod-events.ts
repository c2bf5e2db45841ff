/**
 * The path of every pod event (API source, static pods, PLEG, resync, eviction) to the reconcile
 * queue: what an event preempts, what it enqueues, and what it leaves to housekeeping.
 */
import type { Logger } from 'pino';
import { STATUS_ONLY_UPDATE } from '../controllers/pod-sources/api-source.js';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../util/pod-key.js';
import type { RemovedPodFilter } from './removed-pods.js';
import type { SyncPreempter } from './sync-preemption.js';

/**
 * Enqueue without awaiting: a failure (Redis down) is logged; the resync after reconnect repairs it.
 * An event that makes the pod's sync in flight moot (it is being deleted) cancels that sync first.
 * An event about a pod whose work is done (removed from the runtime and its object deleted here:
 * the echoes of its deletion) enqueues nothing: the housekeeping forgets it (`removed-pods.ts`).
 */
export function enqueuer(queue: ReconcileQueue, logger: Logger, preempter: SyncPreempter, removed: RemovedPodFilter): (key: PodKey, reason: string) => void {
  return (key, reason) => {
    if (removed.nothingLeftToSync(key)) return;
    // A status-only change never cuts a pending delay (a failure backoff) short.
    if (reason !== STATUS_ONLY_UPDATE) preempter.onEvent(key);
    const added = reason === STATUS_ONLY_UPDATE ? queue.enqueueIfIdle(key, reason) : queue.enqueue(key, reason);
    added.catch((error: unknown) => {
      logger.warn({ err: error, podUID: key.uid, reason }, 'enqueue failed; the next resync retries');
    });
  };
}
