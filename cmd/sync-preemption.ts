/**
 * Wires sync preemption (`reconcilers/lifecycle/sync-preemption.ts` decides, the queue's `preempt`
 * cancels): every pod event asks whether the pod's sync in flight has become moot. The event path is
 * built before the store and the pod machinery exist, so the view they give is bound late.
 */
import type { Logger } from 'pino';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import type { PodEvictions } from '../reconcilers/lifecycle/evictions.js';
import type { PodLifecycle } from '../reconcilers/lifecycle/pod-lifecycle.js';
import { syncPreemptionReason } from '../reconcilers/lifecycle/sync-preemption.js';
import type { PodStore } from '../reconcilers/pod/reconciler-deps.js';
import type { PodKey } from '../util/pod-key.js';

/** What the decision reads: the desired pods, the lifecycle kernel and the node's evictions. */
export interface PreemptionView {
  readonly store: Pick<PodStore, 'get' | 'synced'>;
  readonly lifecycle: Pick<PodLifecycle, 'get'>;
  readonly evictions: Pick<PodEvictions, 'of'>;
}

/** Preempts moot syncs once bound; before `bind` (the agent is still being built) nothing runs to preempt. */
export interface SyncPreempter {
  /** A pod event arrived: cancel the pod's sync in flight if the event made it moot. */
  onEvent(key: PodKey): void;
  bind(view: PreemptionView): void;
}

export function lateSyncPreempter(queue: Pick<ReconcileQueue, 'preempt'>, logger: Logger): SyncPreempter {
  let view: PreemptionView | undefined;
  return {
    bind: (bound) => {
      view = bound;
    },
    onEvent: (key) => {
      if (view === undefined) return;
      const why = syncPreemptionReason({
        record: view.lifecycle.get(key.uid),
        desired: view.store.get(key.uid),
        absenceTrusted: view.store.synced(key.uid),
        evicted: view.evictions.of(key.uid) !== undefined,
      });
      if (why !== undefined && queue.preempt(key.uid, why)) logger.info({ podUID: key.uid, pod: `${key.namespace}/${key.name}`, why }, "cancelled the pod's sync in flight");
    },
  };
}
