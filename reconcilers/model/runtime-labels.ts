/**
 * The labels and annotations nodelet puts on CRI sandboxes and containers.
 *
 * Labels identify (the runtime filters on them); annotations carry what a reconcile needs to find
 * again after an agent restart, since nodelet keeps no state of its own on disk: the restart count,
 * the hash of the container spec the container was created from, and the termination settings.
 * The `io.kubernetes.*` keys are the kubelet's, so `crictl` output and log tooling read the same.
 */
import type { Labels } from '../../cri/types.js';
import type { PodKey } from '../../util/pod-key.js';

export const LABEL_POD_NAME = 'io.kubernetes.pod.name';
export const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
export const LABEL_POD_UID = 'io.kubernetes.pod.uid';
export const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';
/** Marks everything nodelet created; housekeeping never touches objects without it. */
export const LABEL_NODE = 'nodelet.dev/node';

export const ANNOTATION_CONTAINER_HASH = 'io.kubernetes.container.hash';
export const ANNOTATION_RESTART_COUNT = 'io.kubernetes.container.restartCount';
export const ANNOTATION_TERMINATION_MESSAGE_PATH = 'io.kubernetes.container.terminationMessagePath';
export const ANNOTATION_TERMINATION_MESSAGE_POLICY = 'io.kubernetes.container.terminationMessagePolicy';
export const ANNOTATION_GRACE_PERIOD = 'io.kubernetes.pod.terminationGracePeriod';
/**
 * The container's preStop handler and ports as JSON (the kubelet's keys): a pod the API no longer
 * has (force-deleted, or deleted while the agent was down) still gets its preStop hook, its
 * httpGet resolving a named port, when its containers are stopped (`restored-pod.ts`).
 */
export const ANNOTATION_PRE_STOP_HANDLER = 'io.kubernetes.container.preStopHandler';
export const ANNOTATION_CONTAINER_PORTS = 'io.kubernetes.container.ports';
/** `init` or `regular`: which list of the pod spec the container came from. */
export const ANNOTATION_CONTAINER_KIND = 'nodelet.dev/container-kind';
/**
 * The images a container's image volumes mount (a JSON array of image IDs), so image GC counts
 * them in use from the container list alone (the kubelet asks ContainerStatus of every container).
 */
export const ANNOTATION_IMAGE_VOLUMES = 'nodelet.dev/image-volumes';

/** The image IDs a container's {@link ANNOTATION_IMAGE_VOLUMES} names; none when absent or malformed. */
export function imageVolumeRefs(annotations: Readonly<Record<string, string>>): string[] {
  const raw = annotations[ANNOTATION_IMAGE_VOLUMES];
  if (raw === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.filter((ref): ref is string => typeof ref === 'string') : [];
  } catch {
    return [];
  }
}

/** Labels of a sandbox nodelet creates for a pod. */
export function sandboxLabels(pod: PodKey, nodeName: string): Labels {
  return {
    [LABEL_POD_NAME]: pod.name,
    [LABEL_POD_NAMESPACE]: pod.namespace,
    [LABEL_POD_UID]: pod.uid,
    [LABEL_NODE]: nodeName,
  };
}

/** Labels of a container nodelet creates for a pod. */
export function containerLabels(pod: PodKey, containerName: string, nodeName: string): Labels {
  return { ...sandboxLabels(pod, nodeName), [LABEL_CONTAINER_NAME]: containerName };
}

/** The label selector that finds everything of one pod on this node. */
export function podSelector(uid: string, nodeName: string): Labels {
  return { [LABEL_POD_UID]: uid, [LABEL_NODE]: nodeName };
}

/** The label selector that finds everything nodelet created on this node. */
export function nodeSelector(nodeName: string): Labels {
  return { [LABEL_NODE]: nodeName };
}

/** Reads a non-negative integer annotation; `fallback` when absent or malformed. */
export function intAnnotation(annotations: Labels, key: string, fallback: number): number {
  const raw = annotations[key];
  if (raw === undefined || !/^\d+$/.test(raw)) return fallback;
  return Number(raw);
}
