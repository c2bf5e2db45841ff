/** Capped exponential backoff, as a pure function of how many attempts in a row have failed. */

/** How retries slow down: the first retry waits `initialMs`, each next one doubles, never past `maxMs`. */
export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * Delay before the next attempt after `failures` consecutive failures (1 = the first failure).
 * Zero or fewer failures means no backoff is due.
 */
export function backoffDelay(policy: BackoffPolicy, failures: number): number {
  if (failures <= 0) return 0;
  // 2^30 already dwarfs any sane cap; clamping the exponent keeps the arithmetic finite.
  const exponent = Math.min(failures - 1, 30);
  return Math.min(policy.initialMs * 2 ** exponent, policy.maxMs);
}
