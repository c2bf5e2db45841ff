/**
 * What a per-pod manager hears about a pod's life on this node. Every piece of per-pod state in
 * nodelet (status versions, restart and pull backoffs, prepared volumes, service-account tokens,
 * event aggregates, start-failure reasons, queue failure counts; later probers, stats, eviction)
 * belongs to one manager that implements the callbacks it needs and is registered once with the
 * {@link PodLifecycle}. Nobody forgets a pod by hand.
 *
 * Rules for implementations:
 * - Callbacks are synchronous and quick (in-memory bookkeeping, starting or stopping a timer);
 *   anything slow is started here and runs on its own.
 * - Callbacks must be idempotent: after an agent restart a manager can hear `podForgotten` for a
 *   pod it never heard of, and `podTerminating` again after a repeated termination.
 * - A callback that throws is logged and does not stop the others.
 */
import type { PodKey } from '../../util/pod-key.js';

/** One container that the runtime has just started. */
export interface StartedContainer {
  readonly name: string;
  /** The runtime's container ID. */
  readonly id: string;
}

/** Callbacks of a per-pod manager; implement only those you need. */
export interface PodLifecycleObserver {
  /** The pod is about to run on this node for the first time since the agent started, or since it was forgotten (a restart). */
  podAdmitted?(key: PodKey): void;
  /** A sandbox of the pod is running (a first one, or a replacement). */
  sandboxStarted?(key: PodKey, sandboxId: string): void;
  /** A container of the pod was started by the runtime. */
  containerStarted?(key: PodKey, container: StartedContainer): void;
  /** The pod started terminating (deleted, past its deadline, or terminal): it never starts again. */
  podTerminating?(key: PodKey, gracePeriodSeconds: number): void;
  /** Nothing of the pod runs any more. Its objects may still exist in the API and the runtime. */
  podTerminated?(key: PodKey): void;
  /**
   * The pod is gone from every pod source and from the runtime, or it was removed from the runtime
   * to run afresh under the same UID (a source delivered it again): drop everything kept for it.
   */
  podForgotten?(key: PodKey): void;
}

/** The part of the lifecycle the executor reports to: what it has just started. */
export interface PodStartEvents {
  sandboxStarted(key: PodKey, sandboxId: string): void;
  containerStarted(key: PodKey, container: StartedContainer): void;
}
