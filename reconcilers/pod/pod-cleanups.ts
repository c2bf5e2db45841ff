/**
 * Pods no pod source has any more, the kubelet's `HandlePodCleanups`: a run for such a pod stops
 * and removes whatever the runtime still has of it, with the preStop hooks kept on its containers
 * (the pod restored from its containers, `runtime/restored-pod.ts`) and the kubelet's grace period,
 * then forgets it; the periodic housekeeping forgets the pods this process already removed.
 */
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import { onlyForgettingLeft } from '../lifecycle/removed-pods.js';
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

/** Stops and removes what the runtime has of a pod gone from every source, then forgets it. */
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
  await deps.volumes.cleanup(key.uid);
  lifecycle.forget(key);
}

/**
 * Forgets every pod this process removed from the runtime that no pod source has any more
 * (`lifecycle/removed-pods.ts`): its directory is removed (again: nothing of it may outlive it)
 * and every per-pod manager drops it. The periodic housekeeping calls this; events about such a
 * pod start no reconcile. A UID with a run in flight is left to that run. A pod whose directory
 * cannot be removed stays (logged) for the next sweep. Resolves with the number forgotten.
 */
export async function forgetRemovedPods(deps: PodReconcilerOptions, runInFlight: (uid: string) => boolean): Promise<number> {
  const { lifecycle, store, volumes, logger } = deps;
  let forgotten = 0;
  for (const key of lifecycle.removedKeys()) {
    const facts = { record: lifecycle.get(key.uid), desired: store.get(key.uid), absenceTrusted: store.synced(key.uid) };
    if (!onlyForgettingLeft(facts) || runInFlight(key.uid)) continue;
    try {
      await volumes.cleanup(key.uid);
    } catch (err: unknown) {
      logger.warn({ err, podUID: key.uid, pod: podDisplayName(key) }, "could not remove a deleted pod's directory; the next housekeeping retries");
      continue;
    }
    lifecycle.forget(key);
    forgotten++;
  }
  return forgotten;
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
