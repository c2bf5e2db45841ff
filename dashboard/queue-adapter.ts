/**
 * bull-board's BullMQ adapter for one node's reconcile queue: labels jobs with their pod and latest
 * run (see `job-labels.ts`), links each job to its pod's timeline page, names the queue after the
 * node, and is read-only unless actions are allowed.
 */
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { JobStatus, QueueJob } from '@bull-board/api/typings/app';
import type { Queue } from 'bullmq';
import { LastRunCache, jobLabel } from './job-labels.js';
import type { LabelledJob } from './job-labels.js';
import { asJobData, parseRunRecord } from './run-records.js';
import type { ClientListing } from './queue-workers.js';

/** Options of {@link ReconcileQueueAdapter}. */
export interface ReconcileQueueAdapterOptions {
  readonly node: string;
  /** Allow retries, cleans and other writes from the board. */
  readonly allowActions: boolean;
  /** The path of a pod's timeline page, from its UID. */
  readonly timelinePath: (uid: string) => string;
  /** The connected clients, shared by every queue's adapter (see `queue-workers.ts`). */
  readonly listing: Pick<ClientListing, 'workersByQueue'>;
}

/** The bull-board view of one node's reconcile queue. */
export class ReconcileQueueAdapter extends BullMQAdapter {
  private readonly lastRuns = new LastRunCache();

  private readonly listing: Pick<ClientListing, 'workersByQueue'>;

  constructor(
    private readonly reconcileQueue: Queue,
    options: ReconcileQueueAdapterOptions,
  ) {
    super(reconcileQueue, {
      readOnlyMode: !options.allowActions,
      allowRetries: options.allowActions,
      displayName: `node ${options.node}`,
      description: `Pod reconciles of node ${options.node}`,
      externalJobUrl: (job) => {
        const data = asJobData(job.data);
        if (data === undefined) return { href: '/' };
        return { displayText: `Reconcile timeline of ${data.namespace}/${data.name}`, href: options.timelinePath(data.uid) };
      },
    });
    this.setFormatter('name', (job: LabelledJob) => jobLabel(job, this.lastRuns.get(job.id)));
    this.listing = options.listing;
  }

  /** The queue's workers from the shared listing, not a listing of every client of Redis per queue (BullMQ's `getWorkers()`). */
  override async getWorkers(): ReturnType<BullMQAdapter['getWorkers']> {
    const workers = await this.listing.workersByQueue([this.reconcileQueue]);
    return this.normalizeWorkers(workers?.get(this.reconcileQueue.name) ?? null, ':w:');
  }

  override async getJobs(jobStatuses: JobStatus[], start?: number, end?: number): ReturnType<BullMQAdapter['getJobs']> {
    const jobs = await super.getJobs(jobStatuses, start, end);
    await this.rememberLastRuns(jobs);
    return jobs;
  }

  override async getJob(id: string): ReturnType<BullMQAdapter['getJob']> {
    const job = await super.getJob(id);
    if (job !== undefined) await this.rememberLastRuns([job]);
    return job;
  }

  /** Reads the newest log line of each job, for the name formatter that runs right after. */
  private async rememberLastRuns(jobs: readonly QueueJob[]): Promise<void> {
    await Promise.all(
      jobs.map(async (job) => {
        const id = job.toJSON().id;
        if (id === undefined || id === null) return;
        const { logs } = await this.reconcileQueue.getJobLogs(String(id), 0, 0, false);
        const newest = logs[0];
        this.lastRuns.set(String(id), newest === undefined ? undefined : parseRunRecord(newest));
      }),
    );
  }
}
