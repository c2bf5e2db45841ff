/**
 * What a pod event does: the one decision of the event path, as the kubelet's `syncLoopIteration`
 * and `PodWorkers.UpdatePod` decide for every channel. Pure: the facts it reads are asked through
 * {@link PodEventFacts}, so a table test covers every kind of event.
 *
 * - A pod whose work is done (removed from the runtime and its object deleted by this process: the
 *   echoes of its own deletion) asks for nothing: the housekeeping forgets it (`housekeeping.ts`).
 * - A status-only update by another writer runs the pod only when it has no run pending
 *   (`enqueue-if-idle`): the kubelet does not sync on status-only updates at all, and the echo of a
 *   failing run's own status write must not cut its backoff short. The echo of nodelet's own
 *   newest status asks for nothing. A status-only update that shows readiness gates disagreeing
 *   with Ready, or the pod evicted, is a full event (the kubelet's `HandlePodReconcile`).
 * - A pod source adding a UID the lifecycle kernel still knows (it removed the pod and delivered
 *   it again: a static pod's manifest removed and written back keeps its UID) asks for a restart
 *   (`request-restart`), as the kubelet's `UpdatePod` flags `restartRequested` on a create for a
 *   UID whose termination was requested: the pod as it ran stops and is removed, then runs afresh.
 *   A UID the kernel has no record of is a first sighting (a restarted agent knows no UID yet),
 *   simply enqueued. A sync in flight is cancelled first when the pod was still syncing (the
 *   kubelet had already started terminating it on the removal); a stop in flight goes on.
 * - A resync (the periodic one, a resume, a queue that may have lost jobs) asks the queue for a
 *   reconcile at least once from now (`resync`): the queue runs a pod that has no job without one,
 *   as the kubelet's periodic sync runs in memory, instead of adding a job per pod per period.
 * - Every other event enqueues; if it made the pod's sync in flight moot (the pod started
 *   terminating, was evicted, or is gone), that sync is cancelled first (`preempt-and-enqueue`),
 *   a resync's too.
 */
import type { PodLifecyclePhase } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import type { PodEvent } from '../../reconcilers/model/pod-event.js';
import type { PodKey } from '../../util/pod-key.js';

/** What the dispatcher does with one event. */
export type PodEventAction =
  /** Nothing: the event asks for no reconcile. */
  | { readonly action: 'drop'; readonly why: 'nothing-left-to-sync' | 'own-status-echo' }
  /** Enqueue only when the pod has no job in any state (never cuts a delay short). */
  | { readonly action: 'enqueue-if-idle' }
  /** Enqueue: coalesces with what is pending and makes a delayed job due now. */
  | { readonly action: 'enqueue' }
  /** Reconcile at least once from now, without a job when the pod has none (the queue's `resync`). */
  | { readonly action: 'resync' }
  /** Cancel the pod's sync in flight (its work became moot), then enqueue. */
  | { readonly action: 'preempt-and-enqueue'; readonly why: string }
  /**
   * Flag the pod's restart on the lifecycle kernel (`requestRestart`), cancel its sync in flight
   * when `preempt`, then enqueue.
   */
  | { readonly action: 'request-restart'; readonly why: string; readonly preempt: boolean };

/** What the decision reads about the pod an event names. */
export interface PodEventFacts {
  /** Removed from the runtime and its object deleted by this process, gone from every source, no run in flight. */
  nothingLeftToSync(key: PodKey): boolean;
  /** The pod's object in the store holds the newest status this node handed its status manager. */
  isOwnStatusEcho(key: PodKey): boolean;
  /** Why the pod's sync in flight must stop now; undefined when it may finish (or none runs). */
  mootSyncReason(key: PodKey): string | undefined;
  /** The phase of the lifecycle kernel's record of the pod; undefined when it has none. */
  lifecyclePhase(key: PodKey): PodLifecyclePhase | undefined;
}

const ENQUEUE: PodEventAction = { action: 'enqueue' };

/** Why a pod restarts, for the logs and the preemption. */
export const RESTART_WHY = 'the pod was removed from its source and added again with the same UID';

function enqueueOrPreempt(key: PodKey, facts: PodEventFacts): PodEventAction {
  const why = facts.mootSyncReason(key);
  return why === undefined ? ENQUEUE : { action: 'preempt-and-enqueue', why };
}

/** An add of a UID the kernel knows is the same UID added again: a restart; of any other, a first sighting. */
function addedAgainOrEnqueue(key: PodKey, facts: PodEventFacts): PodEventAction {
  const phase = facts.lifecyclePhase(key);
  if (phase === undefined) return enqueueOrPreempt(key, facts);
  return { action: 'request-restart', why: RESTART_WHY, preempt: phase === 'syncing' };
}

/** Decides what `event` does. */
export function decidePodEvent(event: PodEvent, facts: PodEventFacts): PodEventAction {
  const { key } = event;
  if (facts.nothingLeftToSync(key)) return { action: 'drop', why: 'nothing-left-to-sync' };
  switch (event.kind) {
    case 'status-updated':
      if (event.readinessGatesDisagree || event.evicted) return enqueueOrPreempt(key, facts);
      return facts.isOwnStatusEcho(key) ? { action: 'drop', why: 'own-status-echo' } : { action: 'enqueue-if-idle' };
    case 'resync':
      return resyncOrPreempt(key, facts);
    case 'source-changed':
      return event.change === 'added' ? addedAgainOrEnqueue(key, facts) : enqueueOrPreempt(key, facts);
    case 'mirror-pod-created':
    case 'runtime-changed':
    case 'probe-result':
    case 'remains-found':
    case 'evicted':
    case 'resize-retry':
      return enqueueOrPreempt(key, facts);
  }
}

/** A resync without a job, unless the pod's sync in flight became moot (then cancel it and enqueue). */
function resyncOrPreempt(key: PodKey, facts: PodEventFacts): PodEventAction {
  const why = facts.mootSyncReason(key);
  return why === undefined ? { action: 'resync' } : { action: 'preempt-and-enqueue', why };
}
