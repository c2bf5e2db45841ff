/**
 * Pod events: what the pod sources, PLEG, the probers, the resizer, garbage collection and the
 * eviction manager tell the agent about one pod. An event states what the emitter saw and nothing
 * else: what it does (drop, enqueue, enqueue only when idle, cancel the sync in flight) is decided
 * in one place, the dispatcher (`controllers/pod-events/`), as the kubelet's `syncLoopIteration`
 * and `UpdatePod` decide for every channel. Emitters see only a {@link PodEventSink}.
 */
import type { PodKey } from '../../util/pod-key.js';

/** A pod source: the API server, the manifest directory (`file`), the manifest URL (`http`). */
export type PodSourceName = 'api' | 'file' | 'http';

/**
 * What a pod source saw of the pod's object: created (`added`), changed beyond its status
 * (`updated`), removed (`deleted`), in a full list (`relisted`), or missing from a full list or
 * replaced under its name (`vanished`).
 */
export type SourceChange = 'added' | 'updated' | 'deleted' | 'relisted' | 'vanished';

/** What PLEG's relist saw of the pod's sandboxes and containers. */
export type RuntimeChange = 'appeared' | 'changed' | 'vanished';

/** Every pod event, by kind. */
export type PodEvent =
  /** A pod source's object of the pod changed (or was listed). */
  | { readonly kind: 'source-changed'; readonly key: PodKey; readonly source: PodSourceName; readonly change: SourceChange }
  /**
   * Only the status of the pod's API object changed. `readinessGatesDisagree`: its Ready condition
   * disagrees with its readiness gates (another writer set a gate); `evicted`: the status shows
   * the pod evicted.
   */
  | { readonly kind: 'status-updated'; readonly key: PodKey; readonly readinessGatesDisagree: boolean; readonly evicted: boolean }
  /** The periodic resync, a resume, or a queue that may have lost jobs asks to look at the pod again. */
  | { readonly kind: 'resync'; readonly key: PodKey }
  /** The mirror pod of a static pod was created: its status can be written now. */
  | { readonly kind: 'mirror-pod-created'; readonly key: PodKey }
  /** PLEG saw the pod's runtime objects change (not the echo of the pod's own last run). */
  | { readonly kind: 'runtime-changed'; readonly key: PodKey; readonly change: RuntimeChange }
  /** A startup probe succeeded, or a liveness or startup probe failed. */
  | { readonly kind: 'probe-result'; readonly key: PodKey; readonly probe: 'liveness' | 'readiness' | 'startup'; readonly result: 'succeeded' | 'failed' }
  /** Garbage collection found parts of a pod no source has any more. */
  | { readonly kind: 'remains-found'; readonly key: PodKey }
  /** The eviction manager chose the pod; `message` is the eviction's. */
  | { readonly kind: 'evicted'; readonly key: PodKey; readonly message: string }
  /** Another pod left the node: a resize the pod deferred for lack of room may fit now. */
  | { readonly kind: 'resize-retry'; readonly key: PodKey };

/** Where emitters hand their events; emitting never throws and never waits. */
export interface PodEventSink {
  emit(event: PodEvent): void;
}

/**
 * The reason a reconcile records for the event that asked for it (the queue's job history and
 * the dashboard), in the words the agent has always used.
 */
export function podEventReason(event: PodEvent): string {
  switch (event.kind) {
    case 'source-changed':
      return event.change;
    case 'status-updated':
      if (event.readinessGatesDisagree) return 'readiness-gate-changed';
      return event.evicted ? 'evicted-status-synced' : 'status-updated';
    case 'resync':
    case 'mirror-pod-created':
      return event.kind;
    case 'runtime-changed':
      return `runtime: ${event.change === 'changed' ? 'containers changed' : `pod ${event.change}`}`;
    case 'probe-result':
      return `${event.probe} probe ${event.result}`;
    case 'remains-found':
      return 'garbage collection: the pod is gone from every source but the runtime still has parts of it';
    case 'evicted':
      return `evicted: ${event.message}`;
    case 'resize-retry':
      return 'a pod left the node: retrying a deferred resize';
  }
}
