/**
 * Waits on the wall clock until `check` holds, for tests that drive real sockets and timers (gRPC
 * plugin servers, file watchers). The bound is for a loaded machine, not a timing claim: a test
 * that needs a duration asserts it with a fake clock instead.
 *
 * @throws Error "timed out waiting for <what>" once `timeoutMs` has passed without `check` holding
 */
export async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
