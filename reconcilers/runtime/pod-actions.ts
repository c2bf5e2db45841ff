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
  /** Restart count the new container gets (one more than the newest existing instance's). */
  readonly restartCount: number;
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
   * Spec containers to create and start: ephemeral containers first (as the kubelet's SyncPod, so
   * an init container that cannot start does not hold them back), then init containers (in order),
   * then app containers.
   */
  readonly containersToStart: readonly ContainerToStart[];
  /** Every regular init container has succeeded: app containers may run. */
  readonly initialized: boolean;
}
