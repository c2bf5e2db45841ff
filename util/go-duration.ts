/**
 * Go's `time.ParseDuration` syntax, as the kubelet's configuration files carry durations
 * (`metav1.Duration`: `12h`, `1m30s`, `500ms`, `0`): an optional sign, then one or more decimal
 * numbers each with a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`).
 */

/** A string that is not a Go duration. */
export class InvalidGoDurationError extends Error {
  constructor(readonly text: string) {
    super(`not a duration such as 90s or 1m30s: "${text}"`);
    this.name = 'InvalidGoDurationError';
  }
}

const UNIT_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a Go duration (fractions of a millisecond kept). @throws InvalidGoDurationError */
export function parseGoDurationMs(raw: string): number {
  const text = raw.trim();
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.replace(/^[-+]/, '');
  if (body === '0') return 0;
  const parts = [...body.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|h|m|s)/g)];
  if (body === '' || parts.map((p) => p[0]).join('') !== body) throw new InvalidGoDurationError(raw);
  return sign * parts.reduce((sum, p) => sum + Number(p[1]) * (UNIT_MS[p[2] ?? ''] ?? 0), 0);
}

/**
 * {@link parseGoDurationMs}, with a string that is not a duration reported as the caller's own
 * error, made from the reason (`not a duration such as 90s or 1m30s: "..."`).
 */
export function parseGoDurationMsOr(raw: string, invalid: (reason: string) => Error): number {
  try {
    return parseGoDurationMs(raw);
  } catch (error) {
    if (error instanceof InvalidGoDurationError) throw invalid(error.message);
    throw error;
  }
}

/**
 * Whole seconds as Go's `time.Duration.String()` writes them, as a kubelet's `/configz` shows
 * durations: `0s`, `20s`, `2m0s`, `1h30m0s`.
 */
export function formatGoDurationSeconds(totalSeconds: number): string {
  const whole = Math.max(0, Math.round(totalSeconds));
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const seconds = whole % 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
