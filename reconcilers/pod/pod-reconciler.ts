/**
 * Reconcile(uid): level-triggered and idempotent. The request names a pod by UID and nothing else;
 * the reconciler reads the desired pod (the pod source's store) and the runtime, and decides.
 *
 *   desired pod ──┐
 *                 ├─ computePodActions ─► executor ─► observe again ─► generatePodStatus ─► status writer
 *   runtime ──────┘                      (only when a runtime action ran: else the first observation,
 *                                         as the kubelet reports what its sync started from)
 *
 * The lifecycle of a UID (monotonic, kept by the pod lifecycle kernel, `lifecycle/pod-lifecycle.ts`,
 * which tells every per-pod manager about each step):
 *
 *   admitted/syncing ──(deletionTimestamp | activeDeadlineSeconds | eviction | terminal phase)──► terminating ──► terminated ──(gone from every source)──► forgotten
 *                    └──(removed from its source and added again: restartRequested)──► terminating ──► terminated, removed ──► forgotten ──► admitted afresh
 *
 * - admission: a pod the kernel has not admitted yet (new, or first seen since the agent started)
 *   goes through the node's admit handlers (`admission/`) first, in creation order against the
 *   pods already admitted. A rejected pod never gets a sandbox: it moves straight to terminating
 *   → terminated and is reported Failed with the handler's reason (e.g. `SysctlForbidden`,
 *   `OutOfcpu`, `NodeAffinity`) and a Warning event, once. Until the Node object is known,
 *   nothing is decided and the pod waits (requeued).
 * - syncing (`sync-pod.ts`, the kubelet's `SyncPod`): the pod exists and is not being deleted. Plan, execute, report. Containers that wait
 *   out a backoff (CrashLoopBackOff, ImagePullBackOff) are reported and the pod requeued for when
 *   the backoff ends. A pod past its `activeDeadlineSeconds` is killed and Failed with
 *   `DeadlineExceeded`; a pod the eviction manager chose (`lifecycle/evictions.ts`) is killed with
 *   its eviction grace period and Failed with `Evicted` and a `DisruptionTarget` condition. A pod whose API phase is terminal is only ever killed: a finished pod
 *   never starts again.
 * - terminating (`terminate-pod.ts`, `SyncTerminatingPod`): the pod has a deletionTimestamp. Stop everything within the grace period — which
 *   can only shrink: a later, shorter grace period cuts a running stop short — report the final
 *   (terminal) status, remove the sandbox and volumes, then delete the pod object (UID
 *   precondition), so when `kubectl delete` returns nothing of the pod is left in the runtime.
 * - restart (`restart-pod.ts`): a pod source removed the pod and delivered it again under the same
 *   UID while this process still knew it (`restartRequested`, a static pod's manifest removed and
 *   written back). The pod as it ran is stopped with its grace period and removed from the runtime;
 *   the housekeeping then forgets it and reconciles it again, which admits it afresh (the kubelet's
 *   `SyncKnownPods` and `HandlePodCleanups`; `kubelet_restarted_pods_total`).
 * - gone (`pod-cleanups.ts`, `HandlePodCleanups`): no pod source has this UID any more (deleted while the agent was down, force-deleted,
 *   or its deletion completed). Stop and remove whatever the runtime still has of it, with the
 *   preStop hooks kept on its containers (the pod restored from its containers, `runtime/restored-pod.ts`,
 *   as the kubelet does) and the kubelet's grace period: 1 s for a pod this agent never synced (an
 *   orphan), else the final object's deletion grace period when known (a force deletion's 0, so
 *   1 s), else the one recorded on its containers; then forget it: every per-pod manager drops its
 *   state. Only once every pod source has synced: before that, absence proves nothing, and a
 *   restarted agent must not tear down the pods it is about to find again.
 *
 * A failed step is thrown after the status is written, so the queue retries with backoff. A
 * cancelled run (the queue's signal: lost lock, shutdown) stops at the next runtime call and
 * writes nothing: the next owner of the UID looks again.
 */
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import type { ReconcileContext, Reconciler, ReconcileResult } from '../../util/reconcile.js';
import { restartDue } from '../lifecycle/removed-pods.js';
import { emptyObservation, hasRuntimeObjects, type ObservedPod } from '../model/observed-pod.js';
import { cleanUpGonePod, forgetPodsToRestart, forgetRemovedPods } from './pod-cleanups.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';
import { stopForRestart } from './restart-pod.js';
import { observe, type RunScope } from './run-scope.js';
import { syncPod } from './sync-pod.js';
import { terminatePod } from './terminate-pod.js';

/** How long to wait before looking again at a pod the store cannot vouch for yet. */
const UNSYNCED_RETRY_MS = 2000;

/** The pod reconciler: one UID's run, dispatched to sync (`sync-pod.ts`), terminate (`terminate-pod.ts`), stop for a restart (`restart-pod.ts`) or clean up (`pod-cleanups.ts`). */
export class PodReconciler implements Reconciler {
  constructor(private readonly options: PodReconcilerOptions) {}

  /** Reconciles one pod. Throws when a step failed (after reporting status), so the queue retries. */
  async reconcile(key: PodKey, context: Pick<ReconcileContext, 'signal'> = {}): Promise<ReconcileResult> {
    const deps = this.options;
    const scope: RunScope = { key, log: deps.logger.child({ podUID: key.uid, pod: podDisplayName(key) }), signal: context.signal };
    // Removed from the runtime and its object deleted by this process: nothing is left to do but
    // forget it, which housekeeping does (a run queued by an event of its last moments ends here).
    const record = deps.lifecycle.get(key.uid);
    if (record?.objectDeletedAt !== undefined) return {};
    const pod = deps.store.get(key.uid);
    // Removed here for its restart: the housekeeping forgets it and asks for the run that starts it afresh.
    if (restartDue({ record, desired: pod })) return {};
    const observed = pod === undefined && this.removedHere(key.uid) ? emptyObservation(key.uid) : await observe(deps, scope);
    if (pod === undefined) return this.reconcileGone(scope, observed);
    if (pod.metadata?.deletionTimestamp !== undefined) {
      await terminatePod(deps, scope, { pod, observed });
      return {};
    }
    if (deps.lifecycle.get(key.uid)?.restartRequested === true) {
      await stopForRestart(deps, scope, { pod, observed });
      return {};
    }
    return syncPod(deps, scope, pod, observed);
  }

  /**
   * Forgets every pod this process removed from the runtime that no pod source has any more
   * (`pod-cleanups.ts`); the periodic housekeeping calls it. Resolves with the number forgotten.
   */
  forgetRemovedPods(runInFlight: (uid: string) => boolean): Promise<number> {
    return forgetRemovedPods(this.options, runInFlight);
  }

  /**
   * Forgets every pod removed here for its restart that a pod source still has (`pod-cleanups.ts`),
   * counting each restart; the periodic housekeeping calls it and reconciles the keys it resolves
   * with, which admits those pods afresh.
   */
  forgetPodsToRestart(runInFlight: (uid: string) => boolean): Promise<PodKey[]> {
    return forgetPodsToRestart(this.options, runInFlight);
  }

  /** A pod no source has: torn down once every source vouches for its absence and its origin confirms it. */
  private async reconcileGone(scope: RunScope, observed: ObservedPod): Promise<ReconcileResult> {
    const { store } = this.options;
    if (!store.synced(scope.key.uid)) {
      scope.log.debug('pod sources not synced yet: not deciding whether the pod is gone');
      return { requeueAfterMs: UNSYNCED_RETRY_MS };
    }
    if (hasRuntimeObjects(observed) && !(await store.confirmGone(scope.key))) {
      scope.log.warn('the pod source has not caught up with a pod its origin still has (or cannot be asked): not tearing it down');
      return { requeueAfterMs: UNSYNCED_RETRY_MS };
    }
    await cleanUpGonePod(this.options, scope, observed);
    return {};
  }

  /**
   * Whether this process removed everything of the pod from the runtime (it finished terminating
   * here): then a pod gone from its sources has nothing left to find, and the runtime is not read
   * again. After an agent restart nothing is known, and the runtime is read as ever.
   */
  private removedHere(uid: string): boolean {
    return this.options.lifecycle.get(uid)?.removedAt !== undefined;
  }
}
