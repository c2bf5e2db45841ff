/**
 * What the init containers' statuses say about the pod's phase and its Initialized condition, as
 * the kubelet's `getPhase` and `GeneratePodInitializedCondition` (v1.37) read them from the
 * statuses it reports, not from what the next reconcile would do:
 *
 * - a regular init container holds the pod Pending while it runs, waits without having run, or has
 *   no status; one that terminated (whatever its code: a failure is decided elsewhere) does not;
 * - a sidecar holds it Pending while it runs without having started (startup probe) or waits
 *   without having run, unless the pod has initialized in its current sandbox (a sidecar restarting
 *   later does not send the pod back to Pending); a sidecar without a status does too; one that
 *   terminated never counts.
 *
 * - a regular init container whose last run failed and whose restart policy does not run it again
 *   fails the pod (the kubelet's failedInitializationNotRestartable), whatever the sidecars before
 *   it show.
 *
 * So a pod whose sandbox is gone after its app containers completed (restartPolicy Never, its
 * sidecars stopped) is Succeeded or Failed, not Pending: the kubelet's init actions would start the
 * init containers again in a new sandbox, but no new sandbox comes for a finished pod.
 */
import type { V1Container, V1ContainerStateTerminated, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { RESTARTING_ALL_CONTAINERS } from '../model/restart-all.js';
import { containerShouldRestart } from '../model/restart-policy.js';
import { isSidecar } from '../model/sidecar.js';

function waitsWithoutHavingRun(status: V1ContainerStatus): boolean {
  return status.state?.running === undefined && status.state?.terminated === undefined && status.lastState?.terminated === undefined;
}

function regularInitPending(status: V1ContainerStatus | undefined): boolean {
  if (status === undefined) return true;
  if (status.state?.running !== undefined) return true;
  return waitsWithoutHavingRun(status);
}

function sidecarPending(status: V1ContainerStatus | undefined): boolean {
  if (status === undefined) return true;
  if (status.state?.running !== undefined) return status.started !== true;
  return waitsWithoutHavingRun(status);
}

/**
 * The init containers hold the pod Pending (the kubelet's pending regular and restartable init
 * containers, and a sidecar without a status). `podHasInitialized`: an app container was created in
 * the pod's current, ready sandbox (HasAnyActiveRegularContainerStarted). Pure.
 */
export function initContainersHoldPending(pod: V1Pod, initStatuses: readonly V1ContainerStatus[], podHasInitialized: boolean): boolean {
  const byName = new Map(initStatuses.map((s) => [s.name, s]));
  return (pod.spec?.initContainers ?? []).some((spec) => {
    const status = byName.get(spec.name);
    if (!isSidecar(spec)) return regularInitPending(status);
    // A sidecar without a status is unknown to the kubelet, which keeps the pod Pending either way.
    if (status === undefined) return true;
    return !podHasInitialized && sidecarPending(status);
  });
}

/** An app container has run at some point (running or terminated): the pod was initialized (HasAnyRegularContainerStarted). */
export function anyAppContainerStarted(statuses: readonly V1ContainerStatus[]): boolean {
  return statuses.some((s) => s.state?.running !== undefined || s.state?.terminated !== undefined);
}

function failedForGood(spec: V1Container, pod: V1Pod, terminated: V1ContainerStateTerminated | undefined): boolean {
  if (terminated === undefined || terminated.exitCode === 0) return false;
  // A container the in-place restart of all containers removed runs again.
  if (terminated.reason === RESTARTING_ALL_CONTAINERS) return false;
  return !containerShouldRestart(spec, pod.spec, terminated.exitCode);
}

/**
 * A regular init container failed and its restart policy does not run it again: the pod has
 * failed (the kubelet's getPhase counts it from the statuses, in the running state's termination or
 * in a waiting container's last one). Pure.
 */
export function initContainerFailedForGood(pod: V1Pod, initStatuses: readonly V1ContainerStatus[]): boolean {
  const byName = new Map(initStatuses.map((s) => [s.name, s]));
  return (pod.spec?.initContainers ?? []).some((spec) => {
    if (isSidecar(spec)) return false;
    const status = byName.get(spec.name);
    const terminated = status?.state?.terminated ?? (status?.state?.waiting === undefined ? undefined : status.lastState?.terminated);
    return failedForGood(spec, pod, terminated);
  });
}
