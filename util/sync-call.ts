/**
 * A synchronous call behind a promise-returning interface: its result resolves, its throw rejects
 * (a non-Error throw wrapped in an Error), as the asynchronous implementation it replaces would.
 * For calls on kernel pseudo-filesystems (cgroupfs, procfs), where a synchronous call never waits
 * on a disk and costs less than the thread-pool round trips of a promise-based one.
 */
export function settleSync<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
