/**
 * The reason cache (the kubelet's `ReasonCache`): why each container of a pod could not be started
 * on its last attempt (`ErrImagePull`, `CrashLoopBackOff`, `CreateContainerConfigError`, …), so the
 * status shows the container waiting with that reason until an attempt succeeds. A per-pod
 * manager: the pod lifecycle tells it when to forget a pod.
 */
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { ContainerStartError } from '../model/sync-errors.js';

/** Why the last attempt to start a container failed (kubelet's reason cache entry). */
export interface ContainerStartFailure {
  /** A kubelet reason: `ErrImagePull`, `ImagePullBackOff`, `InvalidImageName`, `CreateContainerConfigError`, … */
  readonly reason: string;
  readonly message: string;
}

const NONE: ReadonlyMap<string, ContainerStartFailure> = new Map();

export class ContainerStartFailures implements PodLifecycleObserver {
  private readonly byPod = new Map<string, Map<string, ContainerStartFailure>>();

  /** The last failure of each container of the pod that has not started since. */
  of(uid: string): ReadonlyMap<string, ContainerStartFailure> {
    return this.byPod.get(uid) ?? NONE;
  }

  /**
   * Records the outcome of one attempt: every container in `attempted` that is not among
   * `failures` started (its reason is dropped); the others keep their new reason.
   */
  record(uid: string, attempted: readonly string[], failures: readonly ContainerStartError[]): void {
    const failed = new Map(failures.map((f) => [f.containerName, { reason: f.reason, message: f.message }]));
    const entries = new Map(this.of(uid));
    for (const name of attempted) {
      const failure = failed.get(name);
      if (failure === undefined) entries.delete(name);
      else entries.set(name, failure);
    }
    if (entries.size === 0) this.byPod.delete(uid);
    else this.byPod.set(uid, entries);
  }

  /** Pods with a remembered failure. */
  size(): number {
    return this.byPod.size;
  }

  podForgotten(key: PodKey): void {
    this.byPod.delete(key.uid);
  }
}
