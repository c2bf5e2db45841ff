/**
 * Why a step of a reconcile failed, in the kubelet's vocabulary. The reason is what users see in
 * `kubectl get pods` (the container's waiting reason) and in events, so it must be one of the
 * kubelet's: tooling and habits match on them.
 */
import { isCriCancelled } from '../../cri/errors.js';

/** Reasons a container could not be started; each becomes the container's `waiting.reason`. */
export type ContainerStartReason =
  | 'CrashLoopBackOff'
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'ErrImageNeverPull'
  | 'InvalidImageName'
  | 'CreateContainerConfigError'
  | 'CreateContainerError'
  | 'RunContainerError'
  // The container started but its postStart hook failed; it was killed (reconcilers/hooks/).
  | 'PostStartHookError';

/** Reasons the pod as a whole could not be set up (shown as events; containers stay ContainerCreating). */
export type PodSetupReason = 'FailedCreatePodSandBox' | 'FailedCreatePodContainer' | 'FailedMount' | 'FailedPrepareDynamicResources';

/** A container of the pod could not be started. */
export class ContainerStartError extends Error {
  /** Set for backoffs (CrashLoopBackOff, ImagePullBackOff): when trying again makes sense. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly containerName: string,
    readonly reason: ContainerStartReason,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ContainerStartError';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** The pod could not be set up (sandbox, volumes) or torn down. */
export class PodSetupError extends Error {
  constructor(
    readonly reason: PodSetupReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PodSetupError';
  }
}

export function isContainerStartError(error: unknown): error is ContainerStartError {
  return error instanceof ContainerStartError;
}

export function isPodSetupError(error: unknown): error is PodSetupError {
  return error instanceof PodSetupError;
}

/** The message of any thrown value, for events and logs. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Whether a failure is the run being cancelled (its queue lock was lost, or the agent is shutting
 * down) rather than a fault of the pod: a cancelled step records no event, no backoff and no
 * waiting reason; the reconcile stops and the next owner of the UID looks again.
 */
export function isCancellation(error: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || isCriCancelled(error);
}
