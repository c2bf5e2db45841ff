/**
 * Typed errors of the volume manager. Callers branch on `isVolumeError()` and `reason`, never on
 * message text.
 */

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
  readonly cause?: unknown;
}

/** A volume could not be prepared or mounted. The message names the volume and the cause. */
export class VolumeError extends Error {
  override readonly name = 'VolumeError';
  readonly reason: VolumeErrorReason;
  readonly volumeName: string | undefined;

  constructor(init: VolumeErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.reason = init.reason;
    this.volumeName = init.volumeName;
  }
}

/** True for every {@link VolumeError}. */
export function isVolumeError(error: unknown): error is VolumeError {
  return error instanceof VolumeError;
}

/** A `FailedMount` error for one volume: `volume "<name>": <cause>`. */
export function failedMount(volumeName: string, cause: string, original?: unknown): VolumeError {
  return new VolumeError({ reason: 'FailedMount', volumeName, message: `volume "${volumeName}": ${cause}`, cause: original });
}

/** The text of any thrown value, for wrapping it into a {@link VolumeError} message. */
export function describeCause(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
