/**
 * Drops the echo of nodelet's own status write before it reaches the queue: a status-only update
 * after which the API object holds the newest status this node handed its status manager. Such an
 * update tells the node nothing it did not know. The kubelet does not sync on status-only updates
 * at all; nodelet syncs a pod on another writer's status change when it has no run pending (see
 * `STATUS_ONLY_UPDATE`). The status manager writes in the background, so a run usually ends before
 * its write lands; without this filter the echo of each write would find the pod idle and queue one
 * more run that finds nothing to do. The event path is built before the store and the status
 * manager exist, so the view the filter reads is bound late, as the removed-pod filter's is.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStore } from '../reconcilers/pod/reconciler-deps.js';
import type { PodKey } from '../util/pod-key.js';

/** What the filter reads: the desired pods and the status manager. */
export interface StatusEchoView {
  readonly store: Pick<PodStore, 'get'>;
  readonly status: { holdsNewest(pod: V1Pod): boolean };
}

/** Tells the event path which status-only updates are echoes; before `bind` none is. */
export interface StatusEchoFilter {
  /** True when the pod's object in the store holds the newest status this node handed over. */
  isOwnEcho(key: PodKey): boolean;
  bind(view: StatusEchoView): void;
}

export function lateStatusEchoFilter(): StatusEchoFilter {
  let view: StatusEchoView | undefined;
  return {
    bind: (bound) => {
      view = bound;
    },
    isOwnEcho: (key) => {
      if (view === undefined) return false;
      const pod = view.store.get(key.uid);
      return pod !== undefined && view.status.holdsNewest(pod);
    },
  };
}
