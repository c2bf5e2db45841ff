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

/**
 * The queue's own command (an enqueue, the counts, the sentinel, the resync's check) was refused
 * because the connection to Redis is down, or it went down while the command waited for its reply.
 * The command may still run once Redis is back (ioredis re-sends what it had written); the queue's
 * resync after the reconnect repairs whatever did not.
 */
export class RedisUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisUnavailableError';
  }
}

/** True when `e` is a {@link RedisUnavailableError}. */
export function isRedisUnavailableError(e: unknown): e is RedisUnavailableError {
  return e instanceof RedisUnavailableError;
}
