/**
 * The in-place restart of a whole pod: the kubelet's RestartAllContainersOnContainerExits (beta and
 * on by default since 1.36; `ShouldAllContainersRestart` and `AllContainersRestartCleanedUp` in
 * pkg/kubelet/container/helpers.go).
 *
 * A container rule with the action `RestartAllContainers` that matches an exit code makes the pod
 * start over in its sandbox: every init and regular container is stopped at once and removed from
 * the runtime, the sandbox, its network and its volumes stay, and the pod runs again from its
 * first init container. While the removal is under way the pod's `AllContainersRestarting`
 * condition is True; once nothing of its containers is left it turns False and the containers
 * start again.
 *
 * Whether the pod is restarting is read from two places, as the kubelet reads them: the runtime (a
 * container whose newest instance exited with such a code) and the previous status (the condition
 * already True, or a container it shows terminated with such a code). The previous status carries
 * the restart across runs: once the containers are gone, only it remembers why.
 */
import type { V1Container, V1ContainerStatus, V1Pod, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import { latestContainer, type ObservedPod } from './observed-pod.js';
import { matchingRestartRule, RESTART_ALL_CONTAINERS_ACTION } from './restart-policy.js';

/** The kubelet-owned pod condition that is True while the pod's containers are being removed for an in-place restart. */
export const ALL_CONTAINERS_RESTARTING = 'AllContainersRestarting';
/** Its reason while True (pkg/kubelet/status/generate.go). */
export const RESTART_ALL_CONTAINERS_STARTED = 'RestartAllContainersStarted';
/** Its message while True. */
export const RESTART_ALL_CONTAINERS_STARTED_MESSAGE = 'container exited with restart policy rule';
/** The reason a removed container shows, waiting and as its last termination (pkg/kubelet/kubelet_pods.go). */
export const RESTARTING_ALL_CONTAINERS = 'RestartingAllContainers';
/** The message beside that reason. */
export const RESTARTING_ALL_CONTAINERS_MESSAGE = 'The container is removed because RestartAllContainers in place';
/** The exit code a removed container's last termination shows: it was stopped, its own code is gone with it. */
export const RESTARTING_ALL_CONTAINERS_EXIT_CODE = 137;

function initAndRegular(spec: V1PodSpec | undefined): V1Container[] {
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

/** Whether any init or regular container has a rule with the action `RestartAllContainers` (the kubelet's `AllContainersCouldRestart`). */
export function allContainersCouldRestart(spec: V1PodSpec | undefined): boolean {
  return initAndRegular(spec).some((c) => (c.restartPolicyRules ?? []).some((r) => r.action === RESTART_ALL_CONTAINERS_ACTION));
}

/** Whether `container`, having exited with `exitCode`, restarts every container of its pod. */
export function exitRestartsAll(container: V1Container, exitCode: number): boolean {
  return matchingRestartRule(container, exitCode)?.action === RESTART_ALL_CONTAINERS_ACTION;
}

/** The status of container `name` in a pod status (init or regular). */
export function statusOfContainer(status: V1PodStatus | undefined, name: string): V1ContainerStatus | undefined {
  return [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])].find((s) => s.name === name);
}

function conditionTrue(status: V1PodStatus | undefined): boolean {
  return (status?.conditions ?? []).some((c) => c.type === ALL_CONTAINERS_RESTARTING && c.status === 'True');
}

/**
 * Whether the pod is to restart all its containers (the kubelet's `ShouldAllContainersRestart`):
 * the previous status says so already, or an init or regular container exited — its newest
 * runtime instance, or its terminated state in the previous status — with a code whose rule has
 * the action `RestartAllContainers`. Either source may be absent.
 */
export function shouldAllContainersRestart(pod: V1Pod, observed: ObservedPod | undefined, previous: V1PodStatus | undefined): boolean {
  if (conditionTrue(previous)) return true;
  return initAndRegular(pod.spec).some((c) => {
    const latest = observed === undefined ? undefined : latestContainer(observed, c.name);
    if (latest?.state === 'CONTAINER_EXITED' && exitRestartsAll(c, latest.exitCode)) return true;
    const terminated = statusOfContainer(previous, c.name)?.state?.terminated;
    return terminated !== undefined && exitRestartsAll(c, terminated.exitCode);
  });
}

/** Whether the runtime has no instance of any init or regular container of the pod left (the kubelet's `AllContainersRestartCleanedUp`). */
export function allContainersRestartCleanedUp(pod: V1Pod, observed: ObservedPod): boolean {
  return initAndRegular(pod.spec).every((c) => latestContainer(observed, c.name) === undefined);
}

/**
 * Whether the pod's containers are to be removed now for an in-place restart: the
 * `AllContainersRestarting` condition the kubelet's status generation makes True, which its
 * SyncPod then acts on. A pod that is to restart all its containers and still has some.
 */
export function restartsAllContainersNow(pod: V1Pod, observed: ObservedPod, previous: V1PodStatus | undefined): boolean {
  return allContainersCouldRestart(pod.spec) && shouldAllContainersRestart(pod, observed, previous) && !allContainersRestartCleanedUp(pod, observed);
}

/** Whether a termination a status shows is the one an in-place restart of the pod put there (it counts as restartable). */
export function isRestartAllTermination(terminated: { readonly reason?: string } | undefined): boolean {
  return terminated?.reason === RESTARTING_ALL_CONTAINERS;
}
