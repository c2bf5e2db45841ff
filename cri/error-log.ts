/**
 * Logs CRI failures without flooding: nodelet polls the runtime every second (PLEG relist,
 * probes), so a runtime that is down, or one container that keeps failing, would otherwise print
 * the same line forever. The first failure of a kind is a warning; identical repeats for the same
 * method and subject are demoted to debug until `repeatAfterMs` passes or the call succeeds.
 */
import type { CriError } from './errors.js';

/**
 * The slice of a logger the CRI client uses. pino's `Logger` satisfies it; so does a test spy.
 */
export interface CriLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
  debug(obj: Record<string, unknown>, msg: string): void;
}

export interface ErrorLogReducerOptions {
  readonly logger?: CriLogger;
  /** Milliseconds since the epoch; injectable for tests. */
  readonly now: () => number;
  /** An identical failure is warned about again after this long (the kubelet uses one minute). */
  readonly repeatAfterMs: number;
  /** Upper bound on remembered keys, so failures of long-gone containers do not pile up. */
  readonly maxEntries?: number;
}

interface LoggedFailure {
  readonly fingerprint: string;
  readonly loggedAt: number;
}

const DEFAULT_MAX_ENTRIES = 1024;

/** Remembers the last warned failure per key (`method` + subject, e.g. a container ID). */
export class ErrorLogReducer {
  private readonly entries = new Map<string, LoggedFailure>();
  private readonly maxEntries: number;

  constructor(private readonly options: ErrorLogReducerOptions) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  /** Logs `error` for `key`, as a warning unless it repeats the last warning for that key. */
  report(key: string, error: CriError): void {
    const fingerprint = `${error.code}\u0000${error.message}`;
    const now = this.options.now();
    const previous = this.entries.get(key);
    const fields = { method: error.method, code: error.codeName, key, err: error };
    if (previous?.fingerprint === fingerprint && now - previous.loggedAt < this.options.repeatAfterMs) {
      this.options.logger?.debug(fields, 'CRI call failed again (repeat suppressed)');
      return;
    }
    this.entries.delete(key);
    this.entries.set(key, { fingerprint, loggedAt: now });
    this.prune();
    this.options.logger?.warn(fields, 'CRI call failed');
  }

  /** Forgets `key` after a success, so its next failure is warned about at once. */
  clear(key: string): void {
    this.entries.delete(key);
  }

  /** Number of remembered keys (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /** Drops the oldest entries (Map keeps insertion order, and `report` re-inserts) past the bound. */
  private prune(): void {
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) return;
      this.entries.delete(key);
    }
  }
}
