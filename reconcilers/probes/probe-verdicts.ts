/**
 * What the probers tell the plan (`runtime/compute-pod-actions.ts`) about the running containers:
 * which must be killed for a failed liveness or startup probe, and which have not started yet.
 */

/** A liveness or startup probe that failed for one container instance. */
export interface ProbeFailure {
  readonly type: 'liveness' | 'startup';
  /** The probe's `terminationGracePeriodSeconds`, if it sets one. */
  readonly gracePeriodSeconds?: number;
}

/** What the probers say about the running containers, by container ID. */
export interface ProbeVerdicts {
  /** Containers whose liveness or startup probe failed: they must be killed. */
  readonly failures: ReadonlyMap<string, ProbeFailure>;
  /** Running containers whose startup probe has not succeeded yet. */
  readonly notStarted: ReadonlySet<string>;
}

export const NO_PROBE_VERDICTS: ProbeVerdicts = { failures: new Map(), notStarted: new Set() };
