/**
 * The reconcile queue's retry policy as pure functions: how a handler's settlement becomes an
 * outcome, how an outcome becomes the next step for the UID (with the per-UID exponential backoff of
 * `backoff.ts`), and the per-UID failure count.
 * All of it lives in one switch ({@link planNextRun}), like controller-runtime's
 * `reconcileHandler`.
 */
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import { isTerminalReconcileError, type ReconcileResult } from '../../util/reconcile.js';

/** The reconcile queue's default per-UID backoff: 1 s after the first failure, doubling, at most 5 min. */
export const DEFAULT_RECONCILE_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 300_000 };

/** How one run of the handler ended. */
export type RunOutcome =
  | { readonly kind: 'success' }
  | { readonly kind: 'requeue'; readonly afterMs: number }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'terminal'; readonly error: unknown }
  /** Cancelled by a newer event that made the run moot (`RunPreemption`): not a failure. */
  | { readonly kind: 'preempted' };

/** What the queue does with the UID's job after a run. */
export type NextStep =
  /** Finish the job as completed; nothing else is scheduled. */
  | { readonly kind: 'complete' }
  /** Keep the job and run it again after `delayMs` (a requeue-after or a backoff retry). */
  | { readonly kind: 'run-again'; readonly delayMs: number }
  /** Finish the job as failed; nothing else is scheduled. */
  | { readonly kind: 'fail' };

/** The next step for a UID plus its consecutive-failure count after this run. */
export interface RunPlan {
  readonly next: NextStep;
  /** Consecutive failed runs of the UID after this one; 0 means "forget the backoff". */
  readonly failures: number;
}

/**
 * Classifies a handler's settlement. A result without a positive, finite `requeueAfterMs` is a
 * plain success (like controller-runtime, where `RequeueAfter: 0` means "no requeue"). A run that
 * was `preempted` and threw is preempted whatever it threw (it stopped because it was cancelled);
 * one that finished anyway keeps its own outcome.
 */
export function outcomeOf(settled: { readonly value: ReconcileResult } | { readonly error: unknown }, preempted = false): RunOutcome {
  if ('error' in settled) {
    if (preempted) return { kind: 'preempted' };
    return isTerminalReconcileError(settled.error)
      ? { kind: 'terminal', error: settled.error }
      : { kind: 'error', error: settled.error };
  }
  const after = settled.value.requeueAfterMs;
  if (after !== undefined && Number.isFinite(after) && after > 0) {
    return { kind: 'requeue', afterMs: after };
  }
  return { kind: 'success' };
}

/**
 * All retry policy in one switch: success forgets the backoff; requeue-after forgets it and runs
 * again after the delay; an error counts one more failure and runs again after the backoff for
 * that count; a terminal error forgets the backoff and fails the job; a preempted run runs again
 * at once (the event that preempted it is what must be acted on) with the failure count as it was.
 */
export function planNextRun(outcome: RunOutcome, failuresBefore: number, policy: BackoffPolicy): RunPlan {
  switch (outcome.kind) {
    case 'success':
      return { next: { kind: 'complete' }, failures: 0 };
    case 'requeue':
      return { next: { kind: 'run-again', delayMs: outcome.afterMs }, failures: 0 };
    case 'error': {
      const failures = failuresBefore + 1;
      return { next: { kind: 'run-again', delayMs: backoffDelay(policy, failures) }, failures };
    }
    case 'terminal':
      return { next: { kind: 'fail' }, failures: 0 };
    case 'preempted':
      return { next: { kind: 'run-again', delayMs: 0 }, failures: failuresBefore };
  }
}

/**
 * Consecutive failures per UID, in memory (like client-go's per-item rate limiter). Bounded: when
 * more than `maxEntries` UIDs are failing, the one that failed longest ago is forgotten, so UIDs
 * that vanish while failing cannot grow the map without limit.
 */
export class FailureCounter {
  private readonly counts = new Map<string, number>();

  constructor(private readonly maxEntries = 10_000) {}

  /** Consecutive failed runs recorded for `uid` (0 when none). */
  get(uid: string): number {
    return this.counts.get(uid) ?? 0;
  }

  /** Records the count after a run; 0 forgets the UID. */
  set(uid: string, failures: number): void {
    this.counts.delete(uid); // re-insert so Map order is "least recently failed first"
    if (failures <= 0) return;
    this.counts.set(uid, failures);
    if (this.counts.size > this.maxEntries) {
      const oldest = this.counts.keys().next();
      if (oldest.done !== true) this.counts.delete(oldest.value);
    }
  }

  /** Number of UIDs currently remembered as failing. */
  get size(): number {
    return this.counts.size;
  }
}
