/**
 * Wires the forgetting of pods this process is done with (`reconcilers/lifecycle/removed-pods.ts`
 * decides): events about such a pod start no reconcile, and a housekeeping loop every 2 s (the
 * kubelet's housekeeping period) forgets them. The event path is built before the store and the pod
 * machinery exist, so the view the filter reads is bound late, as the sync preempter's is.
 */
import type { Logger } from 'pino';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodLifecycle } from '../reconcilers/lifecycle/pod-lifecycle.js';
import { nothingLeftToSync } from '../reconcilers/lifecycle/removed-pods.js';
import type { PodStore } from '../reconcilers/pod/reconciler-deps.js';
import type { Clock } from '../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../util/periodic-loop.js';
import type { PodKey } from '../util/pod-key.js';

/** The kubelet's `housekeepingPeriod`. */
export const POD_HOUSEKEEPING_PERIOD_MS = 2000;

/** What the filter reads: the desired pods and the lifecycle kernel. */
export interface RemovedPodView {
  readonly store: Pick<PodStore, 'get' | 'synced'>;
  readonly lifecycle: Pick<PodLifecycle, 'get'>;
}

/** Tells the event path which pods need no reconcile; before `bind` every pod does. */
export interface RemovedPodFilter {
  /** True when an event about the pod asks for no reconcile (the housekeeping forgets it). */
  nothingLeftToSync(key: PodKey): boolean;
  bind(view: RemovedPodView): void;
}

/** The filter; `queue` tells whether a pod's reconcile runs now. */
export function lateRemovedPodFilter(queue: Pick<ReconcileQueue, 'runInFlight'>): RemovedPodFilter {
  let view: RemovedPodView | undefined;
  return {
    bind: (bound) => {
      view = bound;
    },
    nothingLeftToSync: (key) =>
      view !== undefined && nothingLeftToSync({ record: view.lifecycle.get(key.uid), desired: view.store.get(key.uid), absenceTrusted: view.store.synced(key.uid), runInFlight: queue.runInFlight(key.uid) }),
  };
}

/** Options of {@link createPodHousekeeping}. */
export interface PodHousekeepingOptions {
  /** `PodReconciler.forgetRemovedPods`, given the queue's in-flight check. */
  readonly forgetRemovedPods: () => Promise<number>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Default {@link POD_HOUSEKEEPING_PERIOD_MS}. */
  readonly periodMs?: number;
}

/** The housekeeping loop (not started): forgets removed pods every period. */
export function createPodHousekeeping(options: PodHousekeepingOptions): PeriodicLoop {
  return createPeriodicLoop({
    name: 'pod housekeeping',
    periodMs: options.periodMs ?? POD_HOUSEKEEPING_PERIOD_MS,
    firstRun: 'after-period',
    clock: options.clock,
    logger: options.logger,
    run: async () => {
      const forgotten = await options.forgetRemovedPods();
      if (forgotten > 0) options.logger.debug({ forgotten }, 'forgot pods removed from the runtime and from every pod source');
    },
  });
}
