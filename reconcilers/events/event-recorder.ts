/**
 * Events about pods, as `kubectl describe pod` shows them. Recording never blocks a reconcile and
 * never fails it: events are best-effort, as in the kubelet.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';

export type EventType = 'Normal' | 'Warning';

export interface PodEvent {
  readonly type: EventType;
  /** A kubelet event reason: `Pulling`, `Pulled`, `Created`, `Started`, `Killing`, `Failed`, … */
  readonly reason: string;
  readonly message: string;
  /** `spec.containers{name}` style path of the container the event is about, if any. */
  readonly fieldPath?: string;
}

/**
 * Records events about pods. Implementations must not throw and must not block. A recorder that
 * keeps per-pod state (aggregates) is a per-pod manager: it forgets a pod through the lifecycle.
 */
export interface EventRecorder extends PodLifecycleObserver {
  record(pod: V1Pod, event: PodEvent): void;
}

/** The field path of a container for `involvedObject.fieldPath`. */
export function containerFieldPath(pod: V1Pod, containerName: string): string {
  const regular = pod.spec?.containers.findIndex((c) => c.name === containerName) ?? -1;
  if (regular >= 0) return `spec.containers{${containerName}}`;
  if (pod.spec?.ephemeralContainers?.some((c) => c.name === containerName) === true) return `spec.ephemeralContainers{${containerName}}`;
  return `spec.initContainers{${containerName}}`;
}
