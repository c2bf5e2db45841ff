/** What the node's `/metrics` reads from the agent's parts: the pod counts' view and the startup times. */
import { uptime } from 'node:os';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import { isStaticPod } from '../../controllers/pod-sources/static-pod.js';
import type { StaticPods } from '../../controllers/pod-sources/static-pods.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import type { PodCountsView } from '../../server/pod-metrics.js';

/** The pod counts read from the store, the lifecycle kernel, the mirror pods and the resizes. */
export function podCountsView(store: Pick<DesiredPodStore, 'list'>, podSync: Pick<PodSync, 'lifecycle' | 'resizesInProgress'>, staticPods: Pick<StaticPods, 'mirrors'> | undefined): PodCountsView {
  return {
    desired: () => store.list(),
    isStatic: isStaticPod,
    hasMirror: (pod) => staticPods?.mirrors.mirrorOf(pod) !== undefined,
    working: () => podSync.lifecycle.list().map((r) => ({ uid: r.key.uid, phase: r.phase, admitted: r.admittedAt !== undefined })),
    resizesInProgress: () => podSync.resizesInProgress(),
  };
}

/** When this process started and the host booted, in milliseconds since the epoch (the kubelet's node startup tracker's). */
export function agentStartup(): { agentStartMs: number; bootMs: number } {
  const now = Date.now();
  return { agentStartMs: now - process.uptime() * 1000, bootMs: now - uptime() * 1000 };
}
