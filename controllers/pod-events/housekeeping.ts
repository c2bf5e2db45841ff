/**
 * The pod housekeeping loop, the kubelet's housekeeping tick of `syncLoopIteration` (every 2 s,
 * its `housekeepingPeriod`): forgets the pods this process removed from the runtime that no pod
 * source has any more, and restarts those removed for their restart that a source still has
 * (`reconcilers/pod/pod-cleanups.ts`): forgotten, then reconciled afresh, as the kubelet's
 * `HandlePodCleanups` prunes its pod workers (`SyncKnownPods`) and sends such a pod a create.
 * Events about such pods start no reconcile (`decide.ts`), so the loop is what forgets them; a pod
 * whose reconcile runs is left to it.
 */
import type { Logger } from 'pino';
import type { PodReconciler } from '../../reconcilers/pod/pod-reconciler.js';
import type { Clock } from '../../util/clock.js';
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { ReconcileQueue } from '../queue/reconcile-queue.js';

/** The kubelet's `housekeepingPeriod`. */
export const POD_HOUSEKEEPING_PERIOD_MS = 2000;

/** The reason recorded for the reconcile that starts a restarted pod afresh. */
export const RESTART_REASON = 'restart: removed from its source and added again with the same UID';

/** Options of {@link createPodHousekeeping}. */
export interface PodHousekeepingOptions {
  readonly reconciler: Pick<PodReconciler, 'forgetRemovedPods' | 'forgetPodsToRestart'>;
  /** Tells whether a pod's reconcile runs now; runs the restarted pods. */
  readonly queue: Pick<ReconcileQueue, 'runInFlight' | 'enqueue'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Default {@link POD_HOUSEKEEPING_PERIOD_MS}. */
  readonly periodMs?: number;
}

/** One housekeeping pass: forgets removed pods, then restarts those due (enqueue failures logged: the next resync runs them). */
export async function housekeepPods(options: Pick<PodHousekeepingOptions, 'reconciler' | 'queue' | 'logger'>): Promise<void> {
  const { reconciler, queue, logger } = options;
  const runInFlight = (uid: string): boolean => queue.runInFlight(uid);
  const forgotten = await reconciler.forgetRemovedPods(runInFlight);
  if (forgotten > 0) logger.debug({ forgotten }, 'forgot pods removed from the runtime and from every pod source');
  const restarted = await reconciler.forgetPodsToRestart(runInFlight);
  await Promise.all(restarted.map((key) => enqueueRestart(options, key)));
}

async function enqueueRestart(options: Pick<PodHousekeepingOptions, 'queue' | 'logger'>, key: PodKey): Promise<void> {
  try {
    await options.queue.enqueue(key, RESTART_REASON);
  } catch (err: unknown) {
    options.logger.warn({ err, podUID: key.uid, pod: podDisplayName(key) }, 'could not enqueue a restarted pod; the next resync runs it');
  }
}

/** The housekeeping loop (not started): {@link housekeepPods} every period. */
export function createPodHousekeeping(options: PodHousekeepingOptions): PeriodicLoop {
  return createPeriodicLoop({
    name: 'pod housekeeping',
    periodMs: options.periodMs ?? POD_HOUSEKEEPING_PERIOD_MS,
    firstRun: 'after-period',
    clock: options.clock,
    logger: options.logger,
    run: () => housekeepPods(options),
  });
}
