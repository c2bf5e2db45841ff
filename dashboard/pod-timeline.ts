/**
 * A pod's reconcile timeline, built from its jobs (pure): one row per recorded run, plus a row for
 * what is happening now (queued, running) and for failures no run recorded (a job that stalled
 * too often); and a one-line verdict of where the pod stands, so a stuck pod's reason is the first
 * thing a user reads.
 */
import type { RunRecord } from '../controllers/queue/runner.js';
import type { JobSnapshot, JobStateName } from './job-history.js';
import { nextRunAt } from './run-records.js';

/** What a row stands for. */
export type TimelineRowKind =
  /** A finished run, from its record. */
  | 'run'
  /** The job is waiting for a worker. */
  | 'queued'
  /** A worker is running the job now. */
  | 'running'
  /** The job failed without a run record saying why (e.g. it stalled too many times). */
  | 'failed';

/** One line of the timeline. */
export interface TimelineRow {
  readonly kind: TimelineRowKind;
  readonly node: string;
  readonly queueName: string;
  readonly jobId: string;
  readonly jobState: JobStateName;
  /** When the run started, or when the job was queued / started / failed. */
  readonly at: number;
  readonly reason: string;
  readonly run?: number;
  readonly attempt?: number;
  readonly outcome?: RunRecord['outcome'];
  readonly durationMs?: number;
  /** When the job runs again (a requeue or a backoff retry). */
  readonly nextRunAt?: number;
  readonly error?: string;
}

/** Where the pod stands, judged from its newest job. */
export type TimelineVerdict =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'queued'; readonly since: number }
  | { readonly kind: 'running'; readonly since: number }
  | { readonly kind: 'retrying'; readonly failures: number; readonly error: string; readonly nextRunAt: number | undefined }
  | { readonly kind: 'requeued'; readonly nextRunAt: number | undefined }
  | { readonly kind: 'failed'; readonly error: string }
  | { readonly kind: 'settled'; readonly at: number };

/** The timeline of one UID. */
export interface PodTimeline {
  readonly uid: string;
  /** Names the pod had in its jobs (one, unless the data is odd). */
  readonly names: readonly string[];
  readonly nodes: readonly string[];
  /** Newest first. */
  readonly rows: readonly TimelineRow[];
  readonly verdict: TimelineVerdict;
  /** Runs started whose records the job logs no longer hold (logs keep the newest runs of a job). */
  readonly untracedRuns: number;
}

/** Builds the timeline of `uid` from its jobs (any order). */
export function buildTimeline(uid: string, jobs: readonly JobSnapshot[]): PodTimeline {
  const rows = jobs.flatMap(rowsOfJob).sort((a, b) => b.at - a.at || (b.run ?? 0) - (a.run ?? 0));
  const names = new Set(jobs.flatMap((j) => (j.data === undefined ? [] : [`${j.data.namespace}/${j.data.name}`])));
  const nodes = new Set(jobs.map((j) => j.node));
  const newest = [...jobs].sort((a, b) => latestTime(b) - latestTime(a))[0];
  const untracedRuns = jobs.reduce((sum, j) => sum + Math.max(0, j.runsStarted - j.runs.length - (j.state === 'active' ? 1 : 0)), 0);
  return {
    uid,
    names: [...names].sort(),
    nodes: [...nodes].sort(),
    rows,
    verdict: newest === undefined ? { kind: 'unknown' } : verdictOf(newest),
    untracedRuns,
  };
}

function rowsOfJob(job: JobSnapshot): TimelineRow[] {
  const base = { node: job.node, queueName: job.queueName, jobId: job.id, jobState: job.state };
  const rows: TimelineRow[] = job.runs.map((record) => ({
    ...base,
    kind: 'run',
    at: Date.parse(record.startedAt),
    reason: record.reason,
    run: record.run,
    attempt: record.attempt,
    outcome: record.outcome,
    durationMs: record.durationMs,
    ...(nextRunAt(record) === undefined ? {} : { nextRunAt: nextRunAt(record) }),
    ...(record.error === undefined ? {} : { error: record.error }),
  }));
  const reason = job.data?.reason ?? '';
  const last = job.runs.at(-1);
  switch (job.state) {
    case 'waiting':
    case 'prioritized':
      rows.push({ ...base, kind: 'queued', at: last === undefined ? job.enqueuedAt : runEnd(last), reason });
      break;
    case 'active':
      rows.push({ ...base, kind: 'running', at: job.processedOn ?? job.enqueuedAt, reason });
      break;
    case 'failed':
      if (last?.outcome !== 'terminal') {
        rows.push({ ...base, kind: 'failed', at: job.finishedOn ?? job.enqueuedAt, reason, error: job.failedReason ?? 'failed' });
      }
      break;
    case 'delayed':
    case 'completed':
      break;
  }
  return rows;
}

function verdictOf(job: JobSnapshot): TimelineVerdict {
  const last = job.runs.at(-1);
  switch (job.state) {
    case 'waiting':
    case 'prioritized':
      return { kind: 'queued', since: last === undefined ? job.enqueuedAt : runEnd(last) };
    case 'active':
      return { kind: 'running', since: job.processedOn ?? job.enqueuedAt };
    case 'failed':
      return { kind: 'failed', error: failureOf(job, last) };
    case 'delayed':
      return delayedVerdict(last);
    case 'completed':
      return { kind: 'settled', at: job.finishedOn ?? (last === undefined ? job.enqueuedAt : runEnd(last)) };
  }
}

/** Why a failed job failed: its terminal run's error, else BullMQ's reason (e.g. stalled too often). */
function failureOf(job: JobSnapshot, last: RunRecord | undefined): string {
  if (last?.outcome === 'terminal') return last.error ?? 'terminal error';
  return job.failedReason ?? 'failed';
}

/** A delayed job waits out a backoff after an error, or a requeue-after. */
function delayedVerdict(last: RunRecord | undefined): TimelineVerdict {
  if (last?.outcome === 'error') {
    return { kind: 'retrying', failures: last.attempt, error: last.error ?? 'error', nextRunAt: nextRunAt(last) };
  }
  return { kind: 'requeued', nextRunAt: last === undefined ? undefined : nextRunAt(last) };
}

function runEnd(record: RunRecord): number {
  return Date.parse(record.startedAt) + record.durationMs;
}

function latestTime(job: JobSnapshot): number {
  return Math.max(job.enqueuedAt, job.processedOn ?? 0, job.finishedOn ?? 0);
}
