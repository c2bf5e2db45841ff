/**
 * The plan of one reconcile, the kubelet's `podActions`: built by one pure function
 * (`compute-pod-actions.ts`, with `compute-init-actions.ts` and `ephemeral-containers.ts` for the
 * init and ephemeral containers), carried out in numbered steps by the executor
 * (`execute-pod-actions.ts`), which never decides. Every field is a decision.
 */

/** A container the plan stops, and why. */
export interface ContainerToKill {
  readonly id: string;
  readonly name: string;
  /** Human-readable reason, used in events and logs. */
  readonly reason: string;
  /** The `Killing` event's message when it is not the default "Stopping container <name>". */
  readonly eventMessage?: string;
  /** Overrides the pod's grace period (a probe's own `terminationGracePeriodSeconds`). */
  readonly gracePeriodSeconds?: number;
}

/** A spec container the plan creates and starts, and why. */
export interface ContainerToStart {
  /** Which list of the pod spec the container is in. */
  readonly kind: 'init' | 'regular' | 'ephemeral';
  /** Index in `pod.spec.initContainers`, `pod.spec.containers` or `pod.spec.ephemeralContainers`. */
  readonly index: number;
  readonly name: string;
  readonly reason: string;
  /**
   * Restart count the new container gets: one more than the newest existing instance's; with no
   * instance, what the container's log directory says (one more than its highest `<n>.log`), as
   * the kubelet's `calcRestartCountByLogDir`, so a container removed by an in-place restart of the
   * pod never writes into an old log file.
   */
  readonly restartCount: number;
}

/**
 * A container instance the in-place restart of the whole pod removes (`RestartAllContainers`,
 * `model/restart-all.ts`), the kubelet's `containerToRemoveInfo`.
 */
export interface ContainerToReset {
  readonly id: string;
  readonly name: string;
  /** It has not exited (running, created, unknown): stopped at once, grace period 0 and no preStop hook, before it is removed. */
  readonly kill: boolean;
  /** Why it goes: it exited with a code whose rule restarts all containers, or it goes with them. */
  readonly reason: string;
}

/** The plan of one reconcile. Every field is a decision; the executor follows it in order. */
export interface PodActions {
  /** Stop every container and every sandbox of the pod before anything else. */
  readonly killPod: boolean;
  /** Why the pod is killed (the sandbox changed, nothing left to run…), for events and logs; empty when it is not. */
  readonly killPodReason: string;
  /** Create a new sandbox (after killing the pod if `killPod`). */
  readonly createSandbox: boolean;
  /** The ready sandbox to start containers in when no new one is created. */
  readonly sandboxId: string | undefined;
  /** Attempt number of the sandbox to create. */
  readonly sandboxAttempt: number;
  /** Containers to stop (when the pod itself is not killed). */
  readonly containersToKill: readonly ContainerToKill[];
  /**
   * Container instances to stop if needed and remove, one after the other in this order, for an
   * in-place restart of the whole pod (the kubelet's `ContainersToReset`): regular containers, then
   * init containers, then those whose exit started it. The sandbox stays. Nothing starts in the
   * same run: the next one starts the pod from its first init container.
   */
  readonly containersToReset: readonly ContainerToReset[];
  /**
   * Spec containers to create and start: ephemeral containers first (as the kubelet's SyncPod, so
   * an init container that cannot start does not hold them back), then init containers (in order),
   * then app containers.
   */
  readonly containersToStart: readonly ContainerToStart[];
  /** Every regular init container has succeeded: app containers may run. */
  readonly initialized: boolean;
}
