/**
 * Pod event sinks for tests: one that calls back with each event's key and the reason the queue
 * would record for it (`podEventReason`), and one that drops everything.
 */
import { podEventReason, type PodEvent, type PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { PodKey } from '../../util/pod-key.js';

/** A sink that hands each event's key, reason and the event itself to `callback`. */
export function podEventsTo(callback: (key: PodKey, reason: string, event: PodEvent) => void): PodEventSink {
  return { emit: (event) => { callback(event.key, podEventReason(event), event); } };
}

/** A sink that drops every event. */
export const NO_POD_EVENTS: PodEventSink = { emit: () => undefined };
