/** Short human renderings of durations, times and run outcomes, shared by the job labels and pages. */
import type { RunRecord } from '../controllers/queue/runner.js';

/** `850 ms`, `1.2 s`, `42 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(ms: number): string {
  const abs = Math.max(0, Math.round(ms));
  if (abs < 1000) return `${abs} ms`;
  if (abs < 10_000) return `${(abs / 1000).toFixed(1)} s`;
  const seconds = Math.round(abs / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

/** `2026-11-22 10:14:03Z` (UTC, to the second). */
export function formatTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

/** `in 4 s`, `3 min ago`, `now` relative to `nowMs`. */
export function formatRelative(epochMs: number, nowMs: number): string {
  const delta = epochMs - nowMs;
  if (Math.abs(delta) < 1000) return 'now';
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/** What a run's outcome means, in a few words: `succeeded`, `error (attempt 3)`, … */
export function describeOutcome(record: Pick<RunRecord, 'outcome' | 'attempt'>): string {
  switch (record.outcome) {
    case 'success':
      return 'succeeded';
    case 'requeue':
      return 'requeued';
    case 'error':
      return `error (attempt ${record.attempt})`;
    case 'terminal':
      return 'failed terminally';
    case 'preempted':
      return 'preempted by a newer event';
  }
}
