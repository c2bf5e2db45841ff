/**
 * What an in-place restart of the whole pod (`model/restart-all.ts`) shows in its status, as the
 * kubelet's status generation reports it (pkg/kubelet/kubelet_pods.go `convertToAPIContainerStatuses`
 * and `getPhase`, pkg/kubelet/status/generate.go), for pods with a `RestartAllContainers` rule:
 *
 * - the condition `AllContainersRestarting`: True (reason `RestartAllContainersStarted`, message
 *   "container exited with restart policy rule") while the pod is to restart all its containers and
 *   the runtime still has some of them; False once none is left, or when nothing restarts; False
 *   with `PodCompleted` / `PodFailed` in a terminal phase;
 * - a container the restart removed, whose previous status showed it running or terminated:
 *   waiting `RestartingAllContainers` ("The container is removed because RestartAllContainers in
 *   place"), its last state terminated with that reason and exit code 137, its restart count one
 *   more than before;
 * - every container keeps what its previous status counted: the restart count never goes down
 *   (its new instance may count from its log directory, or from nothing), and a container whose
 *   runtime has no older instance to show as its last state shows the one its previous status
 *   showed (the terminated state of the instance it replaced, or that one's last state);
 * - the phase: a termination the restart put there counts as one the container restarts from; while
 *   the init containers run again the pod is Pending only as `init-phase.ts` counts them;
 * - `Initialized`, once True, stays True while the init containers run again.
 *
 * The kubelet applies the carrying over of restart counts and last states, and the sticky
 * Initialized, to every pod (its gate is on); nodelet only to the pods that can restart in place,
 * the only ones whose containers it removes while the pod runs.
 */
import type { V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import type { ObservedPod } from '../model/observed-pod.js';
import {
  ALL_CONTAINERS_RESTARTING,
  RESTART_ALL_CONTAINERS_STARTED,
  RESTART_ALL_CONTAINERS_STARTED_MESSAGE,
  RESTARTING_ALL_CONTAINERS,
  RESTARTING_ALL_CONTAINERS_EXIT_CODE,
  RESTARTING_ALL_CONTAINERS_MESSAGE,
  allContainersCouldRestart,
  allContainersRestartCleanedUp,
  shouldAllContainersRestart,
  statusOfContainer,
} from '../model/restart-all.js';

/** How a pod that can restart in place is reported; undefined for any other pod. */
export interface RestartAllView {
  /** The pod is to restart all its containers (the kubelet's `podRestarting`). */
  readonly restarting: boolean;
  /** The previous status: the last one handed over, else the API's. */
  readonly previous: V1PodStatus | undefined;
}

/** The view of a pod with a `RestartAllContainers` rule; undefined for any other. */
export function restartAllView(pod: V1Pod, observed: ObservedPod, previous: V1PodStatus | undefined): RestartAllView | undefined {
  if (!allContainersCouldRestart(pod.spec)) return undefined;
  return { restarting: shouldAllContainersRestart(pod, observed, previous), previous };
}

const REMOVED_WAITING: V1ContainerState = { waiting: { reason: RESTARTING_ALL_CONTAINERS, message: RESTARTING_ALL_CONTAINERS_MESSAGE } };
const REMOVED_TERMINATION: V1ContainerState = {
  terminated: { exitCode: RESTARTING_ALL_CONTAINERS_EXIT_CODE, reason: RESTARTING_ALL_CONTAINERS, message: RESTARTING_ALL_CONTAINERS_MESSAGE },
};

/** The restart count: never below the previous one; one more when a terminated container runs again with no status in between. */
function carriedRestartCount(status: V1ContainerStatus, previous: V1ContainerStatus): number {
  if (status.state?.running !== undefined && previous.state?.terminated !== undefined && previous.restartCount >= status.restartCount) return previous.restartCount + 1;
  return Math.max(status.restartCount, previous.restartCount);
}

/** The last state when the runtime has no older instance to show: the replaced instance's termination, or its own last state. */
function carriedLastState(status: V1ContainerStatus, previous: V1ContainerStatus): V1ContainerState {
  if (status.lastState?.terminated !== undefined) return status.lastState;
  if (previous.containerID !== status.containerID && previous.state?.terminated !== undefined) return { terminated: previous.state.terminated };
  if (previous.lastState?.terminated !== undefined) return { terminated: previous.lastState.terminated };
  return status.lastState ?? {};
}

/**
 * A container's status (`status`, from the runtime) as a pod that can restart in place reports it:
 * removed by the restart (`hasInstance` false, the pod restarting, and it was running or
 * terminated before), or with what its previous status counted carried over.
 */
export function withRestartAll(status: V1ContainerStatus, view: RestartAllView, hasInstance: boolean): V1ContainerStatus {
  const previous = statusOfContainer(view.previous, status.name);
  if (previous === undefined) return status;
  if (!hasInstance && view.restarting && previous.state?.waiting === undefined) {
    return { ...status, state: REMOVED_WAITING, lastState: REMOVED_TERMINATION, restartCount: previous.restartCount + 1, ready: false };
  }
  return { ...status, restartCount: carriedRestartCount(status, previous), lastState: carriedLastState(status, previous) };
}

/** The `AllContainersRestarting` condition (without its transition time), as the kubelet's `GenerateAllContainersRestartingCondition`. */
export function allContainersRestartingCondition(pod: V1Pod, observed: ObservedPod, previous: V1PodStatus | undefined, phase: string): V1PodCondition {
  if (phase === 'Succeeded') return { type: ALL_CONTAINERS_RESTARTING, status: 'False', reason: 'PodCompleted' };
  if (phase === 'Failed') return { type: ALL_CONTAINERS_RESTARTING, status: 'False', reason: 'PodFailed' };
  if (!shouldAllContainersRestart(pod, observed, previous) || allContainersRestartCleanedUp(pod, observed)) return { type: ALL_CONTAINERS_RESTARTING, status: 'False' };
  return { type: ALL_CONTAINERS_RESTARTING, status: 'True', reason: RESTART_ALL_CONTAINERS_STARTED, message: RESTART_ALL_CONTAINERS_STARTED_MESSAGE };
}

/** Whether `Initialized` stays True: the previous status had it True (a pod once initialized is not uninitialized by running its init containers again). */
export function keepsInitialized(view: RestartAllView | undefined): boolean {
  return (view?.previous?.conditions ?? []).some((c) => c.type === 'Initialized' && c.status === 'True');
}
