/**
 * Typed errors of the reconcile queue. Callers branch on the class (or the `is*` predicates),
 * never on messages.
 */

/**
 * Thrown by a reconcile handler when retrying cannot help (the pod spec is invalid, a feature is
 * unsupported…). The queue records the run as failed and does not schedule a retry; the UID runs
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

/** The queue was used after `close()` began (or `start()` was called twice). */
export class ReconcileQueueStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReconcileQueueStateError';
  }
}

/** True when `e` is a {@link ReconcileQueueStateError}. */
export function isReconcileQueueStateError(e: unknown): e is ReconcileQueueStateError {
  return e instanceof ReconcileQueueStateError;
}
