/**
 * Typed errors of the volume manager. Callers branch on `isVolumeError()` and `reason`, never on
 * message text.
 */
import { goQuote } from '../../util/go-quote.js';

/**
 * Why a volume could not be used, as the kubelet reports it:
 * - `FailedMount`: a volume could not be prepared (source missing, API failure, unsupported type);
 *   the pod cannot start until a later reconcile succeeds.
 * - `CreateContainerConfigError`: a container's volume mounts are invalid (unknown volume, subPath
 *   escaping its volume, unsupported mount option); the container cannot be created.
 */
export type VolumeErrorReason = 'FailedMount' | 'CreateContainerConfigError';

/** What a {@link VolumeError} is built from. */
export interface VolumeErrorInit {
  readonly reason: VolumeErrorReason;
  /** The pod volume concerned, when there is one. */
  readonly volumeName?: string;
  /** Human-readable text; conventionally `volume "<name>": <cause>`. */
  readonly message: string;
  /** The cause alone, without the volume's name (defaults to `message`). */
  readonly detail?: string;
  /** The failures of single volumes this one stands for (defaults to itself). */
  readonly failures?: readonly VolumeError[];
  readonly cause?: unknown;
  /**
   * The kubelet's operation that failed, the prefix of its event message: `MountVolume.SetUp`
   * (default), `MountVolume.MountDevice` (staging), `MountVolume.WaitForAttach`.
   */
  readonly operation?: MountOperation;
}

/** The kubelet's mount operations whose failures name themselves in FailedMount events. */
export type MountOperation = 'MountVolume.SetUp' | 'MountVolume.MountDevice' | 'MountVolume.WaitForAttach' | 'VerifyControllerAttachedVolume';

/** A volume could not be prepared or mounted. The message names the volume and the cause. */
export class VolumeError extends Error {
  override readonly name = 'VolumeError';
  readonly reason: VolumeErrorReason;
  readonly volumeName: string | undefined;
  /** The cause alone, without the volume's name. */
  readonly detail: string;
  /** The single-volume failures this error stands for: several when more than one volume failed. */
  readonly failures: readonly VolumeError[];
  /** The kubelet's operation that failed (the event message's prefix). */
  readonly operation: MountOperation;

  constructor(init: VolumeErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.reason = init.reason;
    this.volumeName = init.volumeName;
    this.detail = init.detail ?? init.message;
    this.failures = init.failures ?? [this];
    this.operation = init.operation ?? 'MountVolume.SetUp';
  }
}

/** True for every {@link VolumeError}. */
export function isVolumeError(error: unknown): error is VolumeError {
  return error instanceof VolumeError;
}

/** A `FailedMount` error for one volume: `volume "<name>": <cause>`. */
export function failedMount(volumeName: string, cause: string, original?: unknown, operation?: MountOperation): VolumeError {
  return new VolumeError({ reason: 'FailedMount', volumeName, message: `volume "${volumeName}": ${cause}`, detail: cause, cause: original, ...(operation === undefined ? {} : { operation }) });
}

/**
 * The FailedMount event messages for a failed set-up, one per failing volume, worded as the
 * kubelet's operation executor words them (`MountVolume.SetUp failed for volume "<name>" : <cause>`).
 * A failure that names no volume (the pod's directory) keeps its own text after the prefix.
 */
export function mountFailureMessages(error: unknown): string[] {
  if (!isVolumeError(error)) return [`MountVolume.SetUp failed: ${describeCause(error)}`];
  return error.failures.map((failure) =>
    // The kubelet's VerifyControllerAttachedVolume words its failure as the prefix itself: `<why> for volume "<name>" `.
    failure.operation === 'VerifyControllerAttachedVolume' && failure.volumeName !== undefined
      ? `${failure.detail} for volume ${goQuote(failure.volumeName)} `
      : failure.volumeName === undefined
      ? `${failure.operation} failed: ${failure.message}`
      : `${failure.operation} failed for volume ${goQuote(failure.volumeName)} : ${failure.detail}`,
  );
}

/** The text of any thrown value, for wrapping it into a {@link VolumeError} message. */
export function describeCause(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
