/**
 * The run of a pod whose restart was requested: a pod source removed it and delivered it again
 * under the same UID (a static pod's manifest removed and written back: its UID comes from its
 * content) while this process still knew it (`PodLifecycle.requestRestart`). As the kubelet's pod
 * worker, which kills the pod on the removal and flags `restartRequested` on the create that
 * follows, the pod as it ran stops for good first (terminating → terminated, with its own grace
 * period and preStop hooks, as a pod removed from its source); unlike a pod that only terminated,
 * every sandbox and container of it is then removed here (`removedAt`), so nothing of the old run
 * overlaps the new one. The housekeeping then forgets the UID and asks for a reconcile that admits
 * it afresh (`pod-cleanups.ts` `forgetPodsToRestart`, the kubelet's `HandlePodCleanups`): a new
 * sandbox, and containers whose restart counts their log directories give, as the kubelet's
 * `calcRestartCountByLogDir` for a container with no instance left.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podGracePeriodSeconds } from '../container/sandbox-config.js';
import { emptyObservation, hasRunningParts, hasRuntimeObjects, type ObservedPod } from '../model/observed-pod.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';
import { observeKnown, reported, writeStatus, type RunScope } from './run-scope.js';

/** A pod stopped for its restart still has a ready sandbox or a live container: the queue retries the run. */
export class PodStillRunningError extends Error {
  override readonly name = 'PodStillRunningError';
  constructor(readonly podUid: string) {
    super(`pod ${podUid} still has running parts after being killed for its restart`);
  }
}

/** Stops and removes the pod as it ran, leaving it terminated and removed for the housekeeping's restart. */
export async function stopForRestart(deps: PodReconcilerOptions, scope: RunScope, run: { pod: V1Pod; observed: ObservedPod }): Promise<void> {
  const { key, log, signal } = scope;
  const { lifecycle } = deps;
  // Removed already (by an earlier run): only the housekeeping's forget is left.
  if (lifecycle.get(key.uid)?.removedAt !== undefined) return;
  const gracePeriodSeconds = lifecycle.terminate(key, podGracePeriodSeconds(run.pod));
  let after = run.observed;
  if (hasRuntimeObjects(run.observed)) {
    log.info({ gracePeriodSeconds }, 'pod was removed from its source and added again: stopping it before it starts afresh');
    await deps.executor.killPod({
      pod: run.pod,
      observed: run.observed,
      gracePeriodSeconds,
      currentGracePeriodSeconds: () => lifecycle.terminate(key, podGracePeriodSeconds(deps.store.get(key.uid) ?? run.pod)),
      reason: 'pod was removed from its source and added again',
      ...(signal === undefined ? {} : { signal }),
    });
    // Killing creates nothing: the statuses of what the run started from are all there is.
    after = await observeKnown(deps, scope, run.observed);
    // As the kubelet's SyncTerminatingPod: the stopped containers are reported; the pod is not
    // finished (it runs again), so its phase is not made terminal.
    writeStatus(deps, scope, { pod: run.pod, observed: after, how: { podIsTerminal: false } });
    reported(deps, after);
  }
  if (hasRunningParts(after)) throw new PodStillRunningError(key.uid);
  lifecycle.terminated(key);
  await deps.executor.removePod(key, after, signal);
  lifecycle.removed(key);
  reported(deps, emptyObservation(key.uid));
}
