/**
 * The pod housekeeping loop, the kubelet's housekeeping tick of `syncLoopIteration` (every 2 s,
 * its `housekeepingPeriod`): forgets the pods this process removed from the runtime that no pod
 * source has any more (`reconcilers/pod/pod-cleanups.ts`). Events about such a pod start no
 * reconcile (`decide.ts`), so the loop is what forgets them; a pod whose reconcile runs is left to it.
 */
import type { Logger } from 'pino';
import type { PodReconciler } from '../../reconcilers/pod/pod-reconciler.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { ReconcileQueue } from '../queue/reconcile-queue.js';

/** The kubelet's `housekeepingPeriod`. */
export const POD_HOUSEKEEPING_PERIOD_MS = 2000;

/** Options of {@link createPodHousekeeping}. */
export interface PodHousekeepingOptions {
  readonly reconciler: Pick<PodReconciler, 'forgetRemovedPods'>;
  /** Tells whether a pod's reconcile runs now. */
  readonly queue: Pick<ReconcileQueue, 'runInFlight'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Default {@link POD_HOUSEKEEPING_PERIOD_MS}. */
  readonly periodMs?: number;
}

/** The housekeeping loop (not started): forgets removed pods every period. */
export function createPodHousekeeping(options: PodHousekeepingOptions): PeriodicLoop {
  const { reconciler, queue, logger } = options;
  return createPeriodicLoop({
    name: 'pod housekeeping',
    periodMs: options.periodMs ?? POD_HOUSEKEEPING_PERIOD_MS,
    firstRun: 'after-period',
    clock: options.clock,
    logger,
    run: async () => {
      const forgotten = await reconciler.forgetRemovedPods((uid) => queue.runInFlight(uid));
      if (forgotten > 0) logger.debug({ forgotten }, 'forgot pods removed from the runtime and from every pod source');
    },
  });
}
