/**
 * Image volumes (`volumes[].image`), as the kubelet's `getImageVolumes` and
 * `toKubeContainerImageVolumes` (kuberuntime_manager.go): every image volume of the pod is pulled
 * once per sync that starts containers, before the first start, with the volume's pull policy and
 * the pod's pull secrets; a container that mounts a volume whose pull failed does not start, with
 * the pull's reason (`ErrImagePull`, `ImagePullBackOff`, `ErrImageNeverPull`, `InvalidImageName`)
 * and a `Failed` event on the container. The runtime mounts the image itself (CRI `Mount.image`).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageSpec } from '../../cri/types.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import type { ImagePuller } from '../images/image-puller.js';
import { ContainerStartError, isCancellation } from '../model/sync-errors.js';

/** One image volume's pull: the image the runtime mounts, or why it cannot be had. */
export type ImageVolumePull = { readonly spec: ImageSpec } | { readonly error: ContainerStartError };

/** The pulls of a pod's image volumes, by volume name (empty when it has none). */
export type ImageVolumePulls = ReadonlyMap<string, ImageVolumePull>;

/** The kubelet's image volume counters (`kubelet_image_volume_*_total`). */
export interface ImageVolumeMetrics {
  /** A container start asked for `count` image volumes. */
  requested(count: number): void;
  /** The runtime created a container with `count` image volumes mounted. */
  mounted(count: number): void;
  /** The runtime could not mount a container's `count` image volumes. */
  mountFailed(count: number): void;
}

/** Whether the pod has an image volume (then its runtime handler is needed for the pulls). */
export function hasImageVolumes(pod: V1Pod): boolean {
  return (pod.spec?.volumes ?? []).some((v) => v.image !== undefined);
}

/**
 * Pulls each image volume of the pod. A failed pull is kept as that volume's result (the
 * containers that mount it fail when they start); a cancelled run throws.
 */
export async function pullImageVolumes(
  request: { readonly pod: V1Pod; readonly puller: ImagePuller; readonly runtimeHandler: string; readonly signal?: AbortSignal | undefined },
): Promise<ImageVolumePulls> {
  const { pod, puller, runtimeHandler, signal } = request;
  const pulls = new Map<string, ImageVolumePull>();
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.image === undefined) continue;
    try {
      const { ref } = await puller.ensureVolumeImage(pod, volume.image, signal);
      const spec: ImageSpec = {
        image: ref,
        userSpecifiedImage: volume.image.reference ?? '',
        ...(runtimeHandler === '' ? {} : { runtimeHandler }),
        ...(pod.metadata?.annotations === undefined ? {} : { annotations: pod.metadata.annotations }),
      };
      pulls.set(volume.name, { spec });
    } catch (error) {
      if (isCancellation(error, signal) || !(error instanceof ContainerStartError)) throw error;
      pulls.set(volume.name, { error });
    }
  }
  return pulls;
}

/**
 * The pulled images of the volumes `container` mounts, by volume name.
 * @throws ContainerStartError for the container, with the last failed pull's reason, after a
 *   `Failed` event per failed volume (the kubelet's `Error: <reason>`).
 */
export function imageVolumesFor(pod: V1Pod, container: V1Container, pulls: ImageVolumePulls, events: EventRecorder): Map<string, ImageSpec> {
  const volumes = new Map<string, ImageSpec>();
  let failed: ContainerStartError | undefined;
  for (const mount of container.volumeMounts ?? []) {
    const pull = pulls.get(mount.name);
    if (pull === undefined) continue;
    if ('spec' in pull) {
      volumes.set(mount.name, pull.spec);
      continue;
    }
    events.record(pod, { type: 'Warning', reason: 'Failed', message: `Error: ${pull.error.reason}`, fieldPath: containerFieldPath(pod, container.name) });
    failed = pull.error;
  }
  if (failed !== undefined) {
    const options = { cause: failed, ...(failed.retryAfterMs === undefined ? {} : { retryAfterMs: failed.retryAfterMs }) };
    throw new ContainerStartError(container.name, failed.reason, failed.message, options);
  }
  return volumes;
}
