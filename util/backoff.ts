/** Capped exponential backoff, as a pure function of how many attempts in a row have failed. */

/** How retries slow down: the first retry waits `initialMs`, each next one doubles, never past `maxMs`. */
export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
  /**
   * Spread of each delay, as apimachinery's `wait.Jitter`: the delay becomes
   * `delay * (1 + random() * jitter)`, so clients that failed together (every agent of a fleet
   * when the API server restarts) do not retry together. client-go's reflector uses 1.0, so its
   * capped 30 s retries land anywhere in [30 s, 60 s). Default 0: the exact delay.
   */
  readonly jitter?: number;
}

/**
 * `ms` spread by up to `factor` of itself: `ms * (1 + random() * factor)` (apimachinery's
 * `wait.Jitter`); a factor of 0 or less leaves it unchanged, as `wait.JitterUntil` does.
 * @param random a number in [0, 1); injected so tests are deterministic
 */
export function jittered(ms: number, factor: number, random: () => number): number {
  if (!(factor > 0)) return ms;
  return ms + random() * factor * ms;
}

/**
 * Delay before the next attempt after `failures` consecutive failures (1 = the first failure),
 * jittered when the policy says so. Zero or fewer failures means no backoff is due.
 * @param random a number in [0, 1) for the jitter; default Math.random
 */
export function backoffDelay(policy: BackoffPolicy, failures: number, random: () => number = Math.random): number {
  if (failures <= 0) return 0;
  // 2^30 already dwarfs any sane cap; clamping the exponent keeps the arithmetic finite.
  const exponent = Math.min(failures - 1, 30);
  return jittered(Math.min(policy.initialMs * 2 ** exponent, policy.maxMs), policy.jitter ?? 0, random);
}
