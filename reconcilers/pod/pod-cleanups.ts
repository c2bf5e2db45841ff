/**
 * Pods no pod source has any more, the kubelet's `HandlePodCleanups`: a run for such a pod stops
 * and removes whatever the runtime still has of it, with the preStop hooks kept on its containers
 * (the pod restored from its containers, `runtime/restored-pod.ts`) and the kubelet's grace period,
 * then forgets it; the periodic housekeeping forgets the pods this process already removed, and
 * forgets for a fresh start those removed for their restart that a source still has.
 */
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import { onlyForgettingLeft, restartDue } from '../lifecycle/removed-pods.js';
import { isStaticPodObject } from '../lifecycle/static-pod-names.js';
import { emptyObservation, hasRuntimeObjects, type ObservedPod } from '../model/observed-pod.js';
import { ANNOTATION_GRACE_PERIOD, intAnnotation } from '../model/runtime-labels.js';
import { restorePod } from '../runtime/restored-pod.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';
import { observeKnown, reported, type RunScope } from './run-scope.js';

/** Grace period for a pod the API no longer has: the longest recorded on its containers, else 2 s. */
const ORPHAN_GRACE_SECONDS = 2;

/**
 * Grace period for a pod found in the runtime that this agent never synced (deleted while the agent
 * was down): the kubelet kills such orphans with a 1 s override (`HandlePodCleanups`), preStop
 * hooks bounded by it.
 */
const UNKNOWN_ORPHAN_GRACE_SECONDS = 1;

/** Stops and removes what the runtime has of a pod gone from every source, then forgets it (or, given back meanwhile, leaves it removed for its restart). */
export async function cleanUpGonePod(deps: PodReconcilerOptions, scope: RunScope, observed: ObservedPod): Promise<void> {
  const { key, log, signal } = scope;
  const { lifecycle } = deps;
  if (hasRuntimeObjects(observed)) {
    // As HandlePodCleanups: a runtime pod the pod workers never knew is an orphan, counted once (terminate makes it known).
    if (lifecycle.get(key.uid) === undefined) deps.podFlows?.orphanFound();
    const grace = lifecycle.terminate(key, goneGraceSeconds(deps, key, observed));
    log.info({ gracePeriodSeconds: grace }, 'removing pod that no longer exists in any pod source');
    // The kubelet still runs preStop hooks (and records Killing) for a pod the API dropped at once.
    const pod = restorePod(key, observed.containers, grace);
    await deps.executor.killPod({ pod, observed, gracePeriodSeconds: grace, reason: 'pod no longer exists', ...(signal === undefined ? {} : { signal }) });
    await deps.executor.removePod(key, await observeKnown(deps, scope, observed), signal);
  }
  // Whatever there was is removed (each removal succeeded, or the run threw): PLEG's "vanished" is this run's work.
  reported(deps, emptyObservation(key.uid));
  await deps.volumes.cleanup(key.uid, signal);
  if (lifecycle.get(key.uid)?.restartRequested === true) endRemovedForRestart(deps, key);
  else lifecycle.forget(key);
}

/**
 * A pod whose source delivered it again while it was being cleaned up (its restart was requested)
 * ends terminated and removed rather than forgotten: a restart is the housekeeping's to make and
 * count (`forgetPodsToRestart`), or, should the source have dropped it again, its forget.
 */
function endRemovedForRestart(deps: PodReconcilerOptions, key: PodKey): void {
  const { lifecycle } = deps;
  // Nothing runs any more: the grace period only moves a record that had not started terminating.
  lifecycle.terminate(key, UNKNOWN_ORPHAN_GRACE_SECONDS);
  lifecycle.terminated(key);
  lifecycle.removed(key);
}

/**
 * Forgets every pod this process removed from the runtime that no pod source has any more
 * (`lifecycle/removed-pods.ts`): its directory is removed (again: nothing of it may outlive it)
 * and every per-pod manager drops it. The periodic housekeeping calls this; events about such a
 * pod start no reconcile. A UID with a run in flight is left to that run. A pod whose directory
 * cannot be removed stays (logged) for the next sweep. Resolves with the number forgotten.
 */
export async function forgetRemovedPods(deps: PodReconcilerOptions, runInFlight: (uid: string) => boolean): Promise<number> {
  const { lifecycle, store } = deps;
  let forgotten = 0;
  for (const key of lifecycle.removedKeys()) {
    const facts = { record: lifecycle.get(key.uid), desired: store.get(key.uid), absenceTrusted: store.synced(key.uid) };
    if (!onlyForgettingLeft(facts) || runInFlight(key.uid)) continue;
    if (await forgetRemoved(deps, key)) forgotten++;
  }
  return forgotten;
}

/**
 * Forgets every pod removed here for its restart that a pod source still has
 * (`lifecycle/removed-pods.ts` `restartDue`), as the kubelet's `SyncKnownPods` removes the history
 * of a finished worker with `restartRequested` although its pod is desired: its directory is
 * removed (the new run prepares its volumes anew) and every per-pod manager drops it. Each is
 * counted (`kubelet_restarted_pods_total`, `static` as the kubelet labels it) and resolved with,
 * for the reconcile that admits it afresh (the kubelet's `HandlePodCleanups` sends it a create).
 * A UID with a run in flight is left to the next sweep, as is one whose directory cannot be removed.
 */
export async function forgetPodsToRestart(deps: PodReconcilerOptions, runInFlight: (uid: string) => boolean): Promise<PodKey[]> {
  const { lifecycle, store, logger } = deps;
  const restarted: PodKey[] = [];
  for (const key of lifecycle.removedKeys()) {
    const desired = store.get(key.uid);
    if (desired === undefined || !restartDue({ record: lifecycle.get(key.uid), desired }) || runInFlight(key.uid)) continue;
    if (!(await forgetRemoved(deps, key))) continue;
    const isStatic = isStaticPodObject(desired);
    deps.podFlows?.podRestarted(isStatic);
    logger.info({ podUID: key.uid, pod: podDisplayName(key), static: isStatic }, 'restarting a pod removed from its source and added again with the same UID');
    restarted.push(key);
  }
  return restarted;
}

/** Removes a removed pod's directory and forgets it; false (logged) when the directory cannot be removed yet. */
async function forgetRemoved(deps: PodReconcilerOptions, key: PodKey): Promise<boolean> {
  try {
    await deps.volumes.cleanup(key.uid);
  } catch (err: unknown) {
    deps.logger.warn({ err, podUID: key.uid, pod: podDisplayName(key) }, "could not remove a removed pod's directory; the next housekeeping retries");
    return false;
  }
  deps.lifecycle.forget(key);
  return true;
}

/**
 * The grace period of a pod no source has any more, as the kubelet's: one it never synced (an
 * orphan found after a restart) gets 1 s; one it ran gets its final object's deletion grace
 * period when known (a force deletion's 0), else the longest recorded on its containers.
 */
function goneGraceSeconds(deps: PodReconcilerOptions, key: PodKey, observed: ObservedPod): number {
  if (deps.lifecycle.get(key.uid) === undefined) return UNKNOWN_ORPHAN_GRACE_SECONDS;
  const recorded = Math.max(ORPHAN_GRACE_SECONDS, ...observed.containers.map((c) => intAnnotation(c.annotations, ANNOTATION_GRACE_PERIOD, 0)));
  return Math.min(recorded, deps.store.finalDeletionGraceSeconds?.(key.uid) ?? Number.POSITIVE_INFINITY);
}
