/**
 * Typed errors of the reconcile queue. Callers branch on the class (or the `is*` predicates),
 * never on messages.
 */

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
