/**
 * The eviction manager's view of the node's pods, as the kubelet's eviction manager reads its pod
 * workers: which pods may be evicted, how an eviction reaches the pod (recorded on the lifecycle
 * kernel's evictions, then told as an `evicted` pod event), and when an evicted pod is cleaned up.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeKill, PodEvictions } from '../../reconcilers/lifecycle/evictions.js';
import type { PodLifecycle } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { PodKey } from '../../util/pod-key.js';
import type { EvictionManagerDeps } from './eviction-manager.js';

/** What the view reads and writes. */
export interface EvictionPodSources {
  /** The desired pods of every source. */
  readonly pods: { list(): readonly V1Pod[] };
  readonly lifecycle: Pick<PodLifecycle, 'get'>;
  readonly evictions: Pick<PodEvictions, 'of' | 'record'>;
  readonly podEvents: PodEventSink;
}

/** Pods that may be evicted: admitted and syncing (not terminating, not finished, not already evicted). */
export function evictablePods(sources: Pick<EvictionPodSources, 'pods' | 'lifecycle' | 'evictions'>): V1Pod[] {
  return sources.pods.list().filter((pod) => {
    const uid = pod.metadata?.uid ?? '';
    const phase = pod.status?.phase;
    return sources.lifecycle.get(uid)?.phase === 'syncing' && pod.metadata?.deletionTimestamp === undefined && phase !== 'Succeeded' && phase !== 'Failed' && sources.evictions.of(uid) === undefined;
  });
}

/** The manager's `activePods`, `evict` and `podCleanedUp` over the agent's pods. */
export function evictionPodViews(sources: EvictionPodSources): Pick<EvictionManagerDeps, 'activePods' | 'evict' | 'podCleanedUp'> {
  return {
    activePods: () => evictablePods(sources),
    evict: (key: PodKey, kill: NodeKill) => {
      if (!sources.evictions.record(key, kill)) return false;
      sources.podEvents.emit({ kind: 'evicted', key, message: kill.message });
      return true;
    },
    // Cleaned up: the reconciler stopped it (terminated, its volumes removed) or it is gone.
    podCleanedUp: (key: PodKey) => (sources.lifecycle.get(key.uid)?.phase ?? 'terminated') === 'terminated',
  };
}
