/**
 * The deletion grace period of pods a source removed, as their final object carried it
 * (`metadata.deletionGracePeriodSeconds` of the API's DELETED event), for the reconciler's teardown
 * of a pod it no longer finds (`PodStore.finalDeletionGraceSeconds`). A force deletion
 * (`--grace-period=0 --force`) writes grace 0 and removes the pod at once: a reconcile that runs
 * after both events sees only the absence, yet must stop the pod with that grace, as the kubelet
 * does (it handles the removal with the final object). Bounded: the oldest entries go first, long
 * after their pods were torn down.
 */
import type { V1Pod } from '@kubernetes/client-node';

const DEFAULT_CAPACITY = 4096;

export class DeletionGraceMemory {
  private readonly graces = new Map<string, number>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  /** Remembers the final object's deletion grace period, when it has one. */
  record(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const grace = pod.metadata?.deletionGracePeriodSeconds;
    if (uid === '' || grace === undefined || !Number.isFinite(grace) || grace < 0) return;
    this.graces.delete(uid);
    this.graces.set(uid, grace);
    if (this.graces.size > this.capacity) {
      const oldest = this.graces.keys().next();
      if (oldest.done !== true) this.graces.delete(oldest.value);
    }
  }

  /** The final deletion grace period recorded for `uid`, if any. */
  of(uid: string): number | undefined {
    return this.graces.get(uid);
  }

  get size(): number {
    return this.graces.size;
  }
}
