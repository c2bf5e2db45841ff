/**
 * The kubelet's pod start duration (`kubelet_pod_start_duration_seconds`): from the moment this
 * node first saw the pod to the first status that reports it `Running` where the status it
 * replaces did not (pkg/kubelet/kubelet.go, syncPod). "First seen" is the lifecycle's admission
 * of the UID (the kubelet reads its config source's `config.seen`; nodelet's API source sets
 * none, and the reconciler admits a pod on its first reconcile). Each pod is measured at most
 * once; a pod already `Running` when the agent restarts is not measured again, because the status
 * it replaces is already `Running`. (v1.36's kubelet also observes at a pod's first sync whenever
 * its status manager holds no status for it yet, `!ok || …`, i.e. before the pod runs and for
 * every pod after a kubelet restart: figures near 0 that say nothing about starting pods, so
 * nodelet leaves them out.) */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { StatusWriter } from './status-manager.js';

/** Receives each measured pod start; must not throw. */
export interface PodStartMetrics {
  podStarted(seconds: number): void;
}

/** A per-pod manager: remembers when each pod was first seen until its start is measured or it is forgotten. */
export class PodStartTracker implements PodLifecycleObserver {
  private readonly firstSeenMs = new Map<string, number>();

  constructor(private readonly options: { readonly clock: Clock; readonly metrics: PodStartMetrics }) {}

  podAdmitted(key: PodKey): void {
    if (!this.firstSeenMs.has(key.uid)) this.firstSeenMs.set(key.uid, this.options.clock.now());
  }

  podForgotten(key: PodKey): void {
    this.firstSeenMs.delete(key.uid);
  }

  /** A new status of the pod replaces `previous`; measures the start when it is the move to Running. */
  statusChanged(uid: string, previous: V1PodStatus | undefined, next: V1PodStatus): void {
    const seenMs = this.firstSeenMs.get(uid);
    if (seenMs === undefined || previous?.phase === 'Running' || next.phase !== 'Running') return;
    this.firstSeenMs.delete(uid);
    this.options.metrics.podStarted(Math.max(0, this.options.clock.now() - seenMs) / 1000);
  }

  /** UIDs waiting for their start to be measured. */
  get size(): number {
    return this.firstSeenMs.size;
  }
}

/**
 * `writer`, telling `tracker` of each status handed over with the one it replaces: the status
 * manager's newest for the UID, else the API object's (the kubelet's `existingStatus`).
 */
export function trackPodStarts(writer: StatusWriter & { podStatus(uid: string): V1PodStatus | undefined }, tracker: PodStartTracker): StatusWriter {
  return {
    setPodStatus: (pod: V1Pod, status: V1PodStatus) => {
      const uid = pod.metadata?.uid ?? '';
      tracker.statusChanged(uid, writer.podStatus(uid) ?? pod.status, status);
      writer.setPodStatus(pod, status);
    },
    deletePod: (pod) => writer.deletePod(pod),
    forget: (uid) => {
      writer.forget(uid);
    },
  };
}
