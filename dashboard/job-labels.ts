/**
 * How a reconcile job is labelled in bull-board: the pod's namespace/name, then what its latest
 * run did and how long it took (`web/api-0 · error (attempt 3) in 12 ms · next in 4 s`). The job
 * ID already starts with the pod's UID. bull-board's formatters are synchronous and see only the
 * job's JSON, while a delayed or active job keeps its latest run only in its log; so the queue
 * adapter reads the newest log line when it lists jobs and leaves it in a {@link LastRunCache} for
 * the formatter.
 */
import type { RunRecord } from '../controllers/queue/runner.js';
import { describeOutcome, formatDuration } from './format.js';
import { asJobData, asRunRecord } from './run-records.js';

/** The fields of a job's JSON the label reads (bull-board passes `job.toJSON()`). */
export interface LabelledJob {
  readonly id?: string | number | null;
  readonly name: string;
  readonly data: unknown;
  readonly returnvalue?: unknown;
  readonly failedReason?: string;
}

/** The label of a reconcile job; jobs that are not reconcile jobs keep their name. */
export function jobLabel(job: LabelledJob, lastRun: RunRecord | undefined): string {
  const data = asJobData(job.data);
  if (data === undefined) return job.name;
  const pod = `${data.namespace}/${data.name}`;
  const record = asRunRecord(job.returnvalue) ?? lastRun;
  if (record === undefined) {
    if (job.failedReason !== undefined && job.failedReason !== '') return `${pod} · failed: ${job.failedReason}`;
    return `${pod} · queued (${data.reason})`;
  }
  const next = record.nextRunInMs === undefined ? '' : ` · next in ${formatDuration(record.nextRunInMs)}`;
  return `${pod} · ${describeOutcome(record)} in ${formatDuration(record.durationMs)}${next}`;
}

/**
 * The newest run record of recently listed jobs, by job ID. Bounded: the oldest entries are
 * dropped first; a refresh moves an entry to the young end.
 */
export class LastRunCache {
  private readonly records = new Map<string, RunRecord>();

  constructor(private readonly capacity = 5000) {}

  /** Remembers (or forgets, with `undefined`) the newest run of job `jobId`. */
  set(jobId: string, record: RunRecord | undefined): void {
    this.records.delete(jobId);
    if (record === undefined) return;
    this.records.set(jobId, record);
    while (this.records.size > this.capacity) {
      const oldest = this.records.keys().next();
      if (oldest.done === true) break;
      this.records.delete(oldest.value);
    }
  }

  get(jobId: string | number | null | undefined): RunRecord | undefined {
    return jobId === null || jobId === undefined ? undefined : this.records.get(String(jobId));
  }

  get size(): number {
    return this.records.size;
  }
}
