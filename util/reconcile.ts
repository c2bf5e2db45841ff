/**
 * The reconcile contract between the queue that schedules reconciles (`controllers/queue/`) and the
 * reconciler that performs them (`reconcilers/pod/`), below both, as controller-runtime's
 * `pkg/reconcile`: the request names a pod by its key and says nothing of what happened
 * (level-triggered); the reconciler looks and decides.
 *
 * Outcomes, and what the queue does with each (all policy in `controllers/queue/policy.ts`):
 * - resolves `{}`: done until the next event; the key's failure backoff is forgotten;
 * - resolves `{ requeueAfterMs }`: run again after that delay; the backoff is forgotten;
 * - throws: retried with the key's exponential backoff;
 * - throws a {@link TerminalReconcileError}: not retried; the next event starts over.
 */
import type { PodKey } from './pod-key.js';

/** What a reconcile returns on success. */
export interface ReconcileResult {
  /** Run the key again after this many milliseconds (forgets the failure backoff). Absent or ≤ 0: no requeue. */
  readonly requeueAfterMs?: number;
}

/** What a reconcile is told besides the pod's key. */
export interface ReconcileContext {
  /** Why the run was asked for (the event that enqueued it): for logs and the queue's history, never for decisions. */
  readonly reason: string;
  /** 1 + the key's consecutive failed reconciles before this one. */
  readonly attempt: number;
  /** Aborted when the run must stop: its work became moot (preempted), it lost its lock, or the agent is stopping. */
  readonly signal?: AbortSignal;
}

/** Reconciles one pod: resolves a {@link ReconcileResult}, or throws (see this file's header). */
export interface Reconciler {
  reconcile(request: PodKey, context: ReconcileContext): Promise<ReconcileResult>;
}

/**
 * Thrown by a reconciler when retrying cannot help (the pod spec is invalid, a feature is
 * unsupported…). The queue records the run as failed and does not schedule a retry; the key runs
 * again only when a new event is enqueued for it.
 */
export class TerminalReconcileError extends Error {
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalReconcileError';
  }
}

/** True when `e` is a {@link TerminalReconcileError} (or a subclass). */
export function isTerminalReconcileError(e: unknown): e is TerminalReconcileError {
  return e instanceof TerminalReconcileError;
}
