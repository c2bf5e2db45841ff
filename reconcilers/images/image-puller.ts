/**
 * Makes sure a container's image is present, per its `imagePullPolicy`, as the kubelet's image
 * manager does: `Always` pulls every time a container starts, `IfNotPresent` pulls when absent,
 * `Never` fails with `ErrImageNeverPull` when absent. The default policy (the API server normally
 * sets one) is `Always` for `:latest` or untagged images, else `IfNotPresent`. An unparseable
 * reference is `InvalidImageName` before any pull; a failed pull is `ErrImagePull`.
 */
import type { V1Container, V1ImageVolumeSource, V1Pod } from '@kubernetes/client-node';
import type { AuthConfig, Image, ImageService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import { InvalidImageReferenceError, normalizeImageReference, parseImageReference } from './image-reference.js';
import { IMAGE_PULL_BACKOFF, RestartBackoff } from '../model/restart-backoff.js';
import { credentialHash, type PulledRecords } from './pulled-records.js';
import { mustPullCheckResult, mustVerifyPull, verdictWithoutCredentials, type MustPullCheckResult, type PullVerificationPolicy } from './pull-verification.js';
import { ContainerStartError, errorMessage, isCancellation } from '../model/sync-errors.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';
import { DEFAULT_PULL_LIMITS, PullGate } from './pull-gate.js';

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/** A pod's registry credentials for an image, and how to report the pull secrets that could not be used. */
export interface PodPullCredentials {
  /** None means anonymous. */
  readonly auths: readonly AuthConfig[];
  /** Present when some of the pod's pull secrets were skipped: records the warning that names them. */
  readonly reportUnusable?: () => void;
}

/** Finds registry credentials for an image among the pod's pull secrets. */
export type PullCredentials = (pod: V1Pod, image: string) => Promise<PodPullCredentials>;

/** The node's own credentials for an image (credential provider plugins), tried after the pod's. */
export type NodePullCredentials = (image: string, signal?: AbortSignal) => Promise<readonly AuthConfig[]>;

export interface ImagePullerOptions {
  readonly images: ImageService;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly credentials?: PullCredentials;
  /** The node's credential providers: their credentials follow the pod's (the kubelet's union keyring). */
  readonly nodeCredentials?: NodePullCredentials;
  /** Failed pulls of an image by a pod wait 10 s, doubling to 5 min, before the next try (ImagePullBackOff). */
  readonly backoff?: RestartBackoff;
  /** Node-wide pull concurrency and rate; the kubelet's defaults (serialized, 5 QPS, burst 10) when absent. */
  readonly gate?: PullGate;
  /** What pulled each image (pulled-records.ts); absent: present images are used by any pod, unverified. */
  readonly pulledRecords?: PulledRecords;
  /** When a present image must be pulled again with the pod's credentials (pull-verification.ts). */
  readonly verificationPolicy?: PullVerificationPolicy;
  /** Hears every ensure-image request (`kubelet_image_manager_ensure_image_requests_total`); absent: not counted. */
  readonly ensureMetrics?: EnsureImageMetrics;
}

/**
 * One ensure-image request as the kubelet's image manager labels it: its pull policy, whether the
 * image was found locally and whether a pull was required, each undefined ("unknown") when the
 * request ended before it was known (an invalid name, a failed inspection, `Always` never looks).
 */
export interface EnsureImageRequest {
  readonly pullPolicy: string;
  readonly presentLocally: boolean | undefined;
  readonly pullRequired: boolean | undefined;
}

/** Receives each ensure-image request once it ended, and each check of a present image's pulled record; must not throw. */
export interface EnsureImageMetrics {
  ensured(request: EnsureImageRequest): void;
  /** `kubelet_imagemanager_image_mustpull_checks_total`: made only with pulled records kept (KubeletEnsureSecretPulledImages). */
  mustPullChecked(result: MustPullCheckResult): void;
}

/** A pull refused by the registry pull rate (the kubelet's `pull QPS exceeded`). */
/** The image a container runs: the runtime's reference, and its record when the presence check already read it. */
export interface EnsuredImage {
  readonly ref: string;
  /** The ImageStatus answer that found the image present; absent after a pull. */
  readonly record?: Image;
}

export class PullQpsExceededError extends Error {
  override readonly name = 'PullQpsExceededError';
  constructor() {
    super('pull QPS exceeded');
  }
}

/** The effective pull policy of a container. */
export function pullPolicyOf(container: V1Container): PullPolicy {
  const explicit = container.imagePullPolicy;
  return isPullPolicy(explicit) ? explicit : defaultPullPolicy(container.image ?? '');
}

function isPullPolicy(value: string | undefined): value is PullPolicy {
  return value === 'Always' || value === 'IfNotPresent' || value === 'Never';
}

/** The API server's default for a reference: `Always` for `:latest` or untagged images, else `IfNotPresent`. */
function defaultPullPolicy(image: string): PullPolicy {
  try {
    const ref = parseImageReference(image);
    return ref.digest === undefined && (ref.tag === undefined || ref.tag === 'latest') ? 'Always' : 'IfNotPresent';
  } catch {
    return 'IfNotPresent';
  }
}

/** One image to make present: for a container (its field path names it in events) or an image volume. */
interface PullTarget {
  readonly image: string;
  readonly policy: PullPolicy;
  /** The container's field path; undefined for an image volume (events are the pod's). */
  readonly fieldPath: string | undefined;
  /** The container a failure is reported for; `''` for an image volume. */
  readonly containerName: string;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(3)}s`;
}

export class ImagePuller implements PodLifecycleObserver {
  private readonly backoff: RestartBackoff;
  /** The node-wide pull limits (live: the NodeAgent's `spec.imagePulls`). */
  readonly gate: PullGate;

  constructor(private readonly options: ImagePullerOptions) {
    this.backoff = options.backoff ?? new RestartBackoff(IMAGE_PULL_BACKOFF);
    this.gate = options.gate ?? new PullGate(DEFAULT_PULL_LIMITS, options.clock);
  }

  /** Forgets a finished pod's pull backoffs. */
  podForgotten(key: PodKey): void {
    this.backoff.forgetPrefix(`${key.uid}/`);
  }

  /** Pull backoff entries held (one per pod and image), for tests and diagnostics. */
  backoffSize(): number {
    return this.backoff.size;
  }

  /**
   * Ensures the image of `container` is present and returns the runtime's reference to it;
   * `signal` cancels the runtime calls (a cancelled pull counts as no attempt: no backoff).
   */
  ensureImage(pod: V1Pod, container: V1Container, signal?: AbortSignal): Promise<EnsuredImage> {
    const target = { image: container.image ?? '', policy: pullPolicyOf(container), fieldPath: containerFieldPath(pod, container.name), containerName: container.name };
    return this.ensure(pod, target, signal);
  }

  /**
   * Ensures the image of an image volume is present, as the kubelet's `getImageVolumes`: with the
   * volume's pull policy, the pod's pull secrets, and events on the pod itself (no container).
   * A failure is thrown as a `ContainerStartError` with no container name: each container that
   * mounts the volume fails with its reason when it starts.
   */
  ensureVolumeImage(pod: V1Pod, source: V1ImageVolumeSource, signal?: AbortSignal): Promise<EnsuredImage> {
    const image = source.reference ?? '';
    const policy = isPullPolicy(source.pullPolicy) ? source.pullPolicy : defaultPullPolicy(image);
    return this.ensure(pod, { image, policy, fieldPath: undefined, containerName: '' }, signal);
  }

  private async ensure(pod: V1Pod, target: PullTarget, signal: AbortSignal | undefined): Promise<EnsuredImage> {
    // As the kubelet's EnsureImageExists: each request is counted once it ended, with what it learnt.
    const seen: { presentLocally?: boolean; pullRequired?: boolean } = {};
    try {
      return await this.ensureSeen(pod, target, signal, seen);
    } finally {
      this.options.ensureMetrics?.ensured({ pullPolicy: target.policy, presentLocally: seen.presentLocally, pullRequired: seen.pullRequired });
    }
  }

  private async ensureSeen(pod: V1Pod, target: PullTarget, signal: AbortSignal | undefined, seen: { presentLocally?: boolean; pullRequired?: boolean }): Promise<EnsuredImage> {
    const options = signal === undefined ? {} : { signal };
    const { image, fieldPath, containerName } = target;
    let normalized: string;
    try {
      normalized = normalizeImageReference(image);
    } catch (error) {
      if (!(error instanceof InvalidImageReferenceError)) throw error;
      this.record(pod, { type: 'Warning', reason: 'InspectFailed', message: error.message }, fieldPath);
      throw new ContainerStartError(containerName, 'InvalidImageName', error.message);
    }
    if (target.policy !== 'Always') {
      const present = await this.options.images.imageStatus({ image: normalized }, options);
      seen.presentLocally = present !== undefined;
      // Absent with Never: the kubelet refuses before it decides on a pull (`unknown`).
      if (present === undefined && target.policy === 'Never') seen.pullRequired = undefined;
      else seen.pullRequired = present === undefined || (await this.mustVerify(pod, present.id, normalized));
      if (present !== undefined && !seen.pullRequired) {
        // The kubelet's words with KubeletEnsureSecretPulledImages on (its default since 1.35).
        this.record(pod, { type: 'Normal', reason: 'Pulled', message: `Container image "${image}" already present on machine and can be accessed by the pod` }, fieldPath);
        return { ref: present.id, record: present };
      }
      // Absent, or present but pulled with credentials this pod does not hold: with Never both read
      // the same, as the kubelet's, so a pod learns nothing of images it may not use.
      if (target.policy === 'Never') {
        const message = `Container image "${image}" is not present with pull policy of Never`;
        this.record(pod, { type: 'Warning', reason: 'ErrImageNeverPull', message }, fieldPath);
        throw new ContainerStartError(containerName, 'ErrImageNeverPull', message);
      }
    }
    seen.pullRequired = true;
    return { ref: await this.pull(pod, { ...target, normalized, signal }) };
  }

  /** Records an event on the container's field path, or on the pod itself when there is none (image volumes). */
  private record(pod: V1Pod, event: { type: 'Normal' | 'Warning'; reason: string; message: string }, fieldPath: string | undefined): void {
    this.options.events.record(pod, fieldPath === undefined ? event : { ...event, fieldPath });
  }

  /**
   * True when the pod may not use the present image as it is: it was pulled with credentials the
   * pod does not hold (or, under AlwaysVerify, nodelet never pulled it), so it is pulled again
   * with the pod's own, as the kubelet's KubeletEnsureSecretPulledImages.
   */
  private async mustVerify(pod: V1Pod, imageId: string, normalized: string): Promise<boolean> {
    const records = this.options.pulledRecords;
    if (records === undefined) return false;
    const policy = this.options.verificationPolicy ?? 'NeverVerifyPreloadedImages';
    // As the kubelet's pull manager: every check is counted by its result, a failed read as `error`.
    let result: MustPullCheckResult = 'error';
    try {
      const record = await records.get(imageId);
      // The pod's pull secrets are read from the API only when they decide.
      const known = verdictWithoutCredentials(policy, record);
      const mustPull = known ?? mustVerifyPull(policy, record, ((await this.options.credentials?.(pod, normalized))?.auths ?? []).map(credentialHash));
      result = mustPullCheckResult(policy, record, mustPull);
      return mustPull;
    } finally {
      this.options.ensureMetrics?.mustPullChecked(result);
    }
  }

  /** The runtime's record of a present image (its user, for runAsNonRoot); undefined when absent. */
  imageStatus(imageRef: string, signal?: AbortSignal): Promise<Image | undefined> {
    return this.options.images.imageStatus({ image: imageRef }, signal === undefined ? {} : { signal });
  }

  private async pull(pod: V1Pod, target: PullTarget & { normalized: string; signal: AbortSignal | undefined }): Promise<string> {
    const { clock } = this.options;
    const key = `${pod.metadata?.uid ?? ''}/${target.normalized}`;
    const blocked = this.backoff.blockedSinceLastUpdate(key, clock.now());
    if (blocked !== undefined) {
      const message = `Back-off pulling image "${target.image}"`;
      this.record(pod, { type: 'Normal', reason: 'BackOff', message }, target.fieldPath);
      throw new ContainerStartError(target.containerName, 'ImagePullBackOff', message, { retryAfterMs: blocked.untilMs - clock.now() });
    }
    this.record(pod, { type: 'Normal', reason: 'Pulling', message: `Pulling image "${target.image}"` }, target.fieldPath);
    const queued = clock.now();
    const release = await this.gate.acquire(target.signal);
    const secrets: { reportUnusable?: () => void } = {};
    let lastError: unknown;
    try {
      const started = clock.now();
      const ref = await this.pullWithCredentials(pod, target, secrets);
      const message = `Successfully pulled image "${target.image}" in ${seconds(clock.now() - started)} (${seconds(clock.now() - queued)} including waiting)`;
      this.record(pod, { type: 'Normal', reason: 'Pulled', message }, target.fieldPath);
      return ref;
    } catch (error) {
      if (isCancellation(error, target.signal)) throw error;
      lastError = error;
    } finally {
      release();
    }
    this.backoff.next(key, clock.now());
    const message = `Failed to pull image "${target.image}": ${errorMessage(lastError)}`;
    this.record(pod, { type: 'Warning', reason: 'Failed', message }, target.fieldPath);
    // The kubelet's since 1.37: the pull secrets it could not use are named only after a failed pull.
    secrets.reportUnusable?.();
    throw new ContainerStartError(target.containerName, 'ErrImagePull', message, { cause: lastError });
  }

  /**
   * One pull through the rate limit, trying each of the pod's credentials, then each of the
   * node's, in turn (anonymously when there are none); throws the last failure.
   */
  private async pullWithCredentials(
    pod: V1Pod,
    target: { normalized: string; signal: AbortSignal | undefined },
    secrets: { reportUnusable?: () => void },
  ): Promise<string> {
    if (!this.gate.tryTakeToken()) throw new PullQpsExceededError();
    const found = await this.options.credentials?.(pod, target.normalized);
    if (found?.reportUnusable !== undefined) secrets.reportUnusable = found.reportUnusable;
    const podCredentials = found?.auths ?? [];
    const nodeCredentials = (await this.options.nodeCredentials?.(target.normalized, target.signal)) ?? [];
    const attempts = [...podCredentials.map((auth) => ({ auth, nodeWide: false })), ...nodeCredentials.map((auth) => ({ auth, nodeWide: true }))];
    let lastError: unknown;
    for (const { auth, nodeWide } of attempts.length === 0 ? [{ auth: undefined, nodeWide: false }] : attempts) {
      try {
        const ref = await this.options.images.pullImage({ image: target.normalized }, auth, undefined, target.signal === undefined ? {} : { signal: target.signal });
        // Which credential pulled it: a later pod without it must pull again to use the image,
        // unless it was the node's own.
        await this.options.pulledRecords?.recordPull(ref, auth, nodeWide);
        return ref;
      } catch (error) {
        if (isCancellation(error, target.signal)) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }
}
