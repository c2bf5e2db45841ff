/**
 * Reading what the reconcile queue writes about its jobs: the job data (`ReconcileJobData`) and
 * the JSON {@link RunRecord} logged per run (`controllers/queue/runner.ts`). Redis content is
 * untrusted input here: anything malformed reads as absent, never as a crash of the dashboard.
 */
import type { ReconcileJobData } from '../controllers/queue/redis.js';
import type { RunRecord } from '../controllers/queue/runner.js';

const OUTCOMES = new Set<string>(['success', 'requeue', 'error', 'terminal', 'preempted'] satisfies RunRecord['outcome'][]);

/** A run record from one job log line, or undefined when the line is not one. */
export function parseRunRecord(line: string): RunRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return asRunRecord(value);
}

/** `value` as a run record (e.g. a completed job's return value), or undefined when it is not one. */
export function asRunRecord(value: unknown): RunRecord | undefined {
  if (!isObject(value)) return undefined;
  const { run, reason, attempt, outcome, startedAt, durationMs, nextRunInMs, error } = value;
  if (typeof run !== 'number' || typeof attempt !== 'number' || typeof durationMs !== 'number') return undefined;
  if (typeof reason !== 'string' || typeof startedAt !== 'string' || typeof outcome !== 'string') return undefined;
  if (!isOutcome(outcome) || Number.isNaN(Date.parse(startedAt))) return undefined;
  return {
    run,
    reason,
    attempt,
    outcome,
    startedAt,
    durationMs,
    ...(typeof nextRunInMs === 'number' ? { nextRunInMs } : {}),
    ...(typeof error === 'string' ? { error } : {}),
  };
}

/** A reconcile job's data, or undefined when `value` is not one. */
export function asJobData(value: unknown): ReconcileJobData | undefined {
  if (!isObject(value)) return undefined;
  const { uid, namespace, name, reason } = value;
  if (typeof uid !== 'string' || uid === '' || typeof namespace !== 'string' || typeof name !== 'string') return undefined;
  return { uid, namespace, name, reason: typeof reason === 'string' ? reason : '' };
}

/** Job data as stored in the job hash (a JSON string). */
export function parseJobData(raw: string | null | undefined): ReconcileJobData | undefined {
  if (raw === null || raw === undefined) return undefined;
  try {
    return asJobData(JSON.parse(raw));
  } catch {
    return undefined;
  }
}

/** When the run asked to run again, in epoch milliseconds; undefined when it did not. */
export function nextRunAt(record: RunRecord): number | undefined {
  if (record.nextRunInMs === undefined) return undefined;
  return Date.parse(record.startedAt) + record.durationMs + record.nextRunInMs;
}

/**
 * The prefix of every job ID of `uid` (see `newJobId` in `controllers/queue/redis.ts`: the UID
 * with `:` replaced, a dot, a unique suffix). The unit test ties the two together.
 */
export function jobIdPrefixOf(uid: string): string {
  return `${uid.replaceAll(':', '_')}.`;
}

function isOutcome(value: string): value is RunRecord['outcome'] {
  return OUTCOMES.has(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
