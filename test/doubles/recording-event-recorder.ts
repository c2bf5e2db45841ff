/** An in-memory event recorder for component tests. */
import type { V1Pod } from '@kubernetes/client-node';
import type { EventRecorder, PodEvent } from '../../reconcilers/events/event-recorder.js';

export class RecordingEventRecorder implements EventRecorder {
  readonly events: (PodEvent & { readonly podUid: string })[] = [];

  record(pod: V1Pod, event: PodEvent): void {
    this.events.push({ ...event, podUid: pod.metadata?.uid ?? '' });
  }

  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}
