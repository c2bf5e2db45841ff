/**
 * Events about pods, as `kubectl describe pod` shows them. Recording never blocks a reconcile and
 * never fails it: events are best-effort, as in the kubelet.
 */
import type { V1Pod } from '@kubernetes/client-node';

export type EventType = 'Normal' | 'Warning';

export interface PodEvent {
  readonly type: EventType;
  /** A kubelet event reason: `Pulling`, `Pulled`, `Created`, `Started`, `Killing`, `Failed`, … */
  readonly reason: string;
  readonly message: string;
  /** `spec.containers{name}` style path of the container the event is about, if any. */
  readonly fieldPath?: string;
}

/** Records events about pods. Implementations must not throw and must not block. */
export interface EventRecorder {
  record(pod: V1Pod, event: PodEvent): void;
}

/** The field path of a container for `involvedObject.fieldPath`. */
export function containerFieldPath(pod: V1Pod, containerName: string): string {
  const regular = pod.spec?.containers.findIndex((c) => c.name === containerName) ?? -1;
  if (regular >= 0) return `spec.containers{${containerName}}`;
  return `spec.initContainers{${containerName}}`;
}

/** An event recorder that keeps events in memory, for tests. */
export class RecordingEventRecorder implements EventRecorder {
  readonly events: (PodEvent & { readonly podUid: string })[] = [];

  record(pod: V1Pod, event: PodEvent): void {
    this.events.push({ ...event, podUid: pod.metadata?.uid ?? '' });
  }

  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}
