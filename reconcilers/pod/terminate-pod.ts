/**
 * The run of a pod being deleted (it has a deletionTimestamp), the kubelet's `SyncTerminatingPod`
 * and `SyncTerminatedPod` in one: stop everything within the grace period — which can only shrink:
 * a later, shorter grace period cuts a running stop short — report the final (terminal) status,
 * remove the sandbox and volumes, then delete the pod object (UID precondition), so when
 * `kubectl delete` returns nothing of the pod is left in the runtime.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { emptyObservation, hasRunningParts, type ObservedPod } from '../model/observed-pod.js';
import { podGracePeriodSeconds } from '../container/sandbox-config.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';
import { observeKnown, reported, writeStatus, type RunScope } from './run-scope.js';

/** Stops, reports, removes and deletes a pod being deleted; throws while anything of it still runs. */
export async function terminatePod(deps: PodReconcilerOptions, scope: RunScope, run: { pod: V1Pod; observed: ObservedPod }): Promise<void> {
  const { key, log, signal } = scope;
  const { pod, observed } = run;
  const { lifecycle } = deps;
  const gracePeriodSeconds = lifecycle.terminate(key, podGracePeriodSeconds(pod));
  log.info({ gracePeriodSeconds }, 'terminating pod');
  await deps.executor.killPod({
    pod,
    observed,
    gracePeriodSeconds,
    // A newer object with a shorter grace period cuts the wait short; the kernel keeps the shortest.
    currentGracePeriodSeconds: () => lifecycle.terminate(key, podGracePeriodSeconds(deps.store.get(key.uid) ?? pod)),
    reason: 'pod is being deleted',
    ...(signal === undefined ? {} : { signal }),
  });
  // Killing creates nothing: the statuses of what the run started from are all there is.
  const after = await observeKnown(deps, scope, observed);
  const done = !hasRunningParts(after);
  if (done) lifecycle.terminated(key);
  writeStatus(deps, scope, { pod, observed: after, how: { podIsTerminal: done } });
  reported(deps, after);
  if (!done) throw new Error(`pod ${key.uid} still has running parts after being killed`);
  await deps.executor.removePod(key, after, signal);
  lifecycle.removed(key);
  reported(deps, emptyObservation(key.uid));
  await deps.volumes.cleanup(key.uid, signal);
  if (await deps.status.deletePod(pod)) lifecycle.objectDeleted(key);
}
