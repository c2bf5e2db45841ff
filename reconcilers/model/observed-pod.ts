/**
 * What the runtime reports about one pod, as plain data: the input of the pure decision functions
 * (`computePodActions`, `generatePodStatus`). Built from CRI list and status calls by
 * `observe-pod.ts`; tests build it by hand.
 */
import type { AppliedLinuxResources, ContainerProcessUser, ContainerState, Labels, PodSandboxState } from '../../cri/types.js';

export interface ObservedSandbox {
  readonly id: string;
  readonly state: PodSandboxState;
  /** Sandbox attempt number (incremented each time a pod's sandbox is recreated). */
  readonly attempt: number;
  readonly createdAt: Date;
  /** Primary pod IP; empty for host-network sandboxes or when the network is gone. */
  readonly ip: string;
  readonly additionalIps: readonly string[];
  /** The runtime handler it runs with ('' the default); absent where unknown (a test's fixture). */
  readonly runtimeHandler?: string;
}

export interface ObservedContainer {
  readonly id: string;
  readonly name: string;
  readonly sandboxId: string;
  readonly state: ContainerState;
  /** The restart count this container was created as (from its annotation). */
  readonly restartCount: number;
  /** Hash of the container spec it was created from; a mismatch means the spec changed. */
  readonly specHash: string;
  readonly image: string;
  readonly imageRef: string;
  readonly createdAt: Date;
  readonly startedAt?: Date;
  readonly finishedAt?: Date;
  readonly exitCode: number;
  /** The runtime's brief reason (`Completed`, `Error`, `OOMKilled`) for exited containers. */
  readonly reason: string;
  readonly message: string;
  readonly annotations: Labels;
  /** The cgroup values the runtime reports it applies; absent when it reports none. */
  readonly applied?: AppliedLinuxResources;
  /** The log file the runtime writes for it (removed with it); absent when unknown. */
  readonly logPath?: string;
  /** Its first process's identity as the runtime reports it; absent when it reports none (containerd 1.6). */
  readonly user?: ContainerProcessUser;
}

export interface ObservedPod {
  readonly uid: string;
  /** Every sandbox of the pod, newest first. */
  readonly sandboxes: readonly ObservedSandbox[];
  /** Every container of the pod, newest first (several per name after restarts). */
  readonly containers: readonly ObservedContainer[];
}

/** The empty observation: nothing of the pod exists in the runtime. */
export function emptyObservation(uid: string): ObservedPod {
  return { uid, sandboxes: [], containers: [] };
}

/** The newest sandbox, if any. */
export function latestSandbox(observed: ObservedPod): ObservedSandbox | undefined {
  return observed.sandboxes[0];
}

/** The newest container with this name, if any. */
export function latestContainer(observed: ObservedPod, name: string): ObservedContainer | undefined {
  return observed.containers.find((c) => c.name === name);
}

/**
 * The restart count a new instance of container `name` gets: one more than its newest instance's;
 * with no instance, what its log directory says (`fromLogs`: one more than the highest `<n>.log`,
 * the kubelet's `calcRestartCountByLogDir`), else 0.
 */
export function nextRestartCount(observed: ObservedPod, name: string, fromLogs?: ReadonlyMap<string, number>): number {
  const latest = latestContainer(observed, name);
  return latest === undefined ? (fromLogs?.get(name) ?? 0) : latest.restartCount + 1;
}

/** Whether a container may still run: anything but exited (created and unknown ones included). */
export function isLiveContainer(container: ObservedContainer): boolean {
  return container.state !== 'CONTAINER_EXITED';
}

/** Whether the runtime has anything of the pod at all: a sandbox or a container, in any state. */
export function hasRuntimeObjects(observed: ObservedPod): boolean {
  return observed.sandboxes.length > 0 || observed.containers.length > 0;
}

/** Whether anything of the pod may still be running (a ready sandbox or a container that is not exited). */
export function hasRunningParts(observed: ObservedPod): boolean {
  return observed.sandboxes.some((s) => s.state === 'SANDBOX_READY') || observed.containers.some(isLiveContainer);
}
