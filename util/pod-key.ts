/**
 * The one key of a pod everywhere in nodelet: queue jobs, the desired-pod store, the lifecycle
 * registry, the status manager and the runtime's labels all name a pod by this.
 *
 * The UID is the identity: two pods with the same namespace/name but different UIDs are different
 * pods (a StatefulSet pod deleted and recreated). Namespace and name travel with it because API
 * paths need them and humans read them, never to compare pods.
 */
import type { V1Pod } from '@kubernetes/client-node';

export interface PodKey {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
}

/** The key of an API pod object; empty strings where the object lacks a field. */
export function podKeyOf(pod: V1Pod): PodKey {
  return { uid: pod.metadata?.uid ?? '', namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '' };
}

/** `namespace/name`, for logs and messages. */
export function podDisplayName(key: PodKey): string {
  return `${key.namespace}/${key.name}`;
}
