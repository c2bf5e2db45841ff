/**
 * The pod event bus: every emitter (pod sources, PLEG, probers, resizer, GC, eviction) is built
 * with it before anything else exists, since it needs nothing to be made. Events emitted before
 * the dispatcher attaches (none in practice: the emitters start after the assembly) wait in order
 * and are handed over when it does, so no event is lost to construction order.
 */
import type { PodEvent, PodEventSink } from '../../reconcilers/model/pod-event.js';

/** Thrown when a second handler attaches: one dispatcher decides every event. */
export class PodEventBusAttachedError extends Error {
  constructor() {
    super('the pod event bus already has its dispatcher');
    this.name = 'PodEventBusAttachedError';
  }
}

export class PodEventBus implements PodEventSink {
  private handler: ((event: PodEvent) => void) | undefined;
  private readonly waiting: PodEvent[] = [];

  emit(event: PodEvent): void {
    if (this.handler === undefined) this.waiting.push(event);
    else this.handler(event);
  }

  /** Hands every event, those already emitted first, to `handler` (the dispatcher). Once. */
  attach(handler: (event: PodEvent) => void): void {
    if (this.handler !== undefined) throw new PodEventBusAttachedError();
    this.handler = handler;
    for (const event of this.waiting.splice(0)) handler(event);
  }
}
