/**
 * Pods the node itself decided to stop (the eviction manager's victims), as the kubelet's
 * `killPodFunc` with a status function: the decision is recorded here and the pod requeued; the
 * reconciler then stops it through the one kill path (the lifecycle's terminate, the executor's
 * kill) with the recorded grace period and reports it Failed with the recorded reason and message
 * and (unless the decision says not) a `DisruptionTarget` condition. A decision stands until the pod is forgotten.
 *
 * Registered on the pod lifecycle (a per-pod manager), so a forgotten pod leaves nothing here.
 */
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from './observer.js';

/** One node-initiated stop. */
export interface NodeKill {
  /** e.g. `Evicted`. */
  readonly reason: string;
  readonly message: string;
  /** Grace period the pod's containers get (never longer than the pod's own). */
  readonly gracePeriodSeconds: number;
  /**
   * Whether the Failed status carries the kubelet's `DisruptionTarget` condition; absent: it does
   * (pressure eviction). The kubelet adds none for a local storage limit.
   */
  readonly disruptionTarget?: boolean;
  /** The DisruptionTarget condition's message when it differs from the status message (preemption's). */
  readonly disruptionMessage?: string;
}

export class PodEvictions implements PodLifecycleObserver {
  private readonly kills = new Map<string, NodeKill>();

  /** Pods with an eviction recorded and not yet forgotten. */
  size(): number {
    return this.kills.size;
  }

  /** Records the decision; the first one for a pod stands. Returns false when the pod was already decided. */
  record(key: PodKey, kill: NodeKill): boolean {
    if (this.kills.has(key.uid)) return false;
    this.kills.set(key.uid, kill);
    return true;
  }

  /** The decision recorded for a pod, if any. */
  of(uid: string): NodeKill | undefined {
    return this.kills.get(uid);
  }

  podForgotten(key: PodKey): void {
    this.kills.delete(key.uid);
  }
}
