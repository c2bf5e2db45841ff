/**
 * A pod this process is done with. It terminated, and this process removed every sandbox and
 * container of it from the runtime (`removedAt`, set only by the run that stops a deleted pod); then
 * that run deleted its API object (`objectDeletedAt`), or is still at it, or no pod source has the
 * pod any more. No event about such a pod asks for work:
 * the kubelet's pod worker ignores updates of a pod it finished terminating (`UpdatePod` on a
 * finished worker), handles its removal from the API without a sync (`HandlePodRemoves`), and
 * drops the worker in its housekeeping (`HandlePodCleanups` → `SyncKnownPods`, every 2 s). nodelet
 * does the same: such an event starts no reconcile, and the periodic sweep
 * (`PodReconciler.forgetRemovedPods`) forgets the pod once it is gone from every source.
 *
 * The events this saves are the echoes of the pod's own deletion: the API server's update that
 * sets the grace period to 0 (often seen before the answer to the deletion reaches the run that
 * asked for it), then the deletion itself.
 *
 * A removed pod whose restart was requested (a source delivered its UID again after removing it)
 * and that a source still has is due to restart: as the kubelet's `SyncKnownPods` removes such a
 * worker's history although the pod is desired and `HandlePodCleanups` sends the pod a fresh
 * create, the sweep (`PodReconciler.forgetPodsToRestart`) forgets it and asks for a reconcile,
 * which admits it afresh. Until then no event about it asks for work either.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecycleRecord } from './pod-lifecycle.js';

/** What the decisions read about one pod. */
export interface RemovedPodFacts {
  /** The kernel's record of the pod; undefined when it has none. */
  readonly record: PodLifecycleRecord | undefined;
  /** The newest desired object from the pod sources; undefined when none has it. */
  readonly desired: V1Pod | undefined;
  /** Whether the pod's absence from the sources can be trusted (`PodStore.synced(uid)`). */
  readonly absenceTrusted: boolean;
  /** Whether a reconcile of the pod runs in this process now; absent: none does. */
  readonly runInFlight?: boolean;
}

/** Whether all that is left of the pod is to forget it: removed here and gone from every source. */
export function onlyForgettingLeft(facts: RemovedPodFacts): boolean {
  return facts.record?.removedAt !== undefined && facts.desired === undefined && facts.absenceTrusted;
}

/**
 * Whether all that is left is to forget the pod and admit it afresh: removed here for a restart
 * (`restartRequested`), its object not deleted here (an API pod this process deleted is on its way
 * out), and a source has it.
 */
export function restartDue(facts: Pick<RemovedPodFacts, 'record' | 'desired'>): boolean {
  const { record } = facts;
  return record?.restartRequested === true && record.removedAt !== undefined && record.objectDeletedAt === undefined && facts.desired !== undefined;
}

/**
 * Whether an event about the pod asks for no reconcile: removed here, and its object was deleted
 * here (the object left in a source is on its way out, or held by a finalizer), or the run in
 * flight is the one deleting it (a run of a removed pod that still has its object can only be
 * that: it deletes the object, or fails and is retried by the queue, events or not), or all that is
 * left is to forget it, or to forget it and start it again.
 */
export function nothingLeftToSync(facts: RemovedPodFacts): boolean {
  const { record } = facts;
  if (record?.removedAt === undefined) return false;
  return record.objectDeletedAt !== undefined || facts.runInFlight === true || onlyForgettingLeft(facts) || restartDue(facts);
}
