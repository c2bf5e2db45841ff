/**
 * Reads the reconcile history of pods out of the node queues: every job of a UID with its run
 * records (for the timeline page), and which pods the queues have seen recently or under a name
 * (for the index and the search). Only reads; job IDs start with the UID, so a pod's jobs are found
 * from the ID lists alone and only they are loaded.
 */
import { Job } from 'bullmq';
import type { Queue } from 'bullmq';
import type { ReconcileJobData, RedisClient } from '../controllers/queue/redis.js';
import type { RunRecord } from '../controllers/queue/runner.js';
import type { NodeQueue } from './queue-directory.js';
import type { ClientListing } from './queue-workers.js';
import { asJobData, jobIdPrefixOf, parseJobData, parseRunRecord } from './run-records.js';

/** The states a reconcile job can be in (BullMQ 6 keeps paused jobs as waiting). */
export type JobStateName = 'active' | 'waiting' | 'prioritized' | 'delayed' | 'completed' | 'failed';

/** In the order a job found twice (it moved while being listed) is attributed: the livelier state wins. */
export const JOB_STATES: readonly JobStateName[] = ['active', 'waiting', 'prioritized', 'delayed', 'failed', 'completed'];

/** One job of a pod, with its runs. */
export interface JobSnapshot {
  readonly node: string;
  readonly queueName: string;
  readonly id: string;
  readonly state: JobStateName;
  readonly data: ReconcileJobData | undefined;
  /** When the job was added (epoch ms). */
  readonly enqueuedAt: number;
  /** When its latest run started (epoch ms). */
  readonly processedOn?: number;
  readonly finishedOn?: number;
  readonly failedReason?: string;
  /** Runs started, including those whose records were trimmed from the log or never written. */
  readonly runsStarted: number;
  /** Run records from the job log, oldest first. */
  readonly runs: readonly RunRecord[];
}

/** A pod as the queues last saw it. */
export interface PodSighting {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  /** State of its newest job. */
  readonly state: JobStateName;
  /** Latest of its newest job's added, started and finished times. */
  readonly lastActivityAt: number;
}

/** Which pods to look for. */
export interface PodFilter {
  readonly namespace?: string;
  readonly name?: string;
  /** Newest job IDs read per state and node; all of them when absent. */
  readonly limitPerState?: number;
}

/** Job counts of one node's queue. */
export interface NodeQueueCounts {
  readonly node: string;
  readonly name: string;
  readonly counts: Readonly<Record<JobStateName, number>>;
  /** Workers connected to the queue (agents reconciling it); undefined when Redis cannot tell. */
  readonly workers: number | undefined;
}

/** What {@link JobHistory} reads from. */
export interface JobHistorySource {
  /** The node queues currently known. */
  list(): readonly NodeQueue[];
}

/** Reads pods' reconcile history from the node queues. */
export class JobHistory {
  /**
   * @param redis the dashboard's connection, for the job reads;
   * @param listing the connected clients, shared with the board (one listing per server for every queue).
   */
  constructor(
    private readonly source: JobHistorySource,
    private readonly redis: RedisClient,
    private readonly listing: Pick<ClientListing, 'workersPerQueue'>,
  ) {}

  /** Every job of `uid` in every node queue, with its runs. */
  async jobsOfPod(uid: string): Promise<JobSnapshot[]> {
    const prefix = jobIdPrefixOf(uid);
    const perQueue = await Promise.all(
      this.source.list().map(async (entry) => {
        const ids = await idsByState(entry.queue, undefined);
        const mine = [...ids].filter(([id]) => id.startsWith(prefix));
        const snapshots = await Promise.all(mine.map(([id, state]) => snapshotOf(entry, id, state)));
        return snapshots.filter((s): s is JobSnapshot => s !== undefined && s.data?.uid === uid);
      }),
    );
    return perQueue.flat();
  }

  /** Pods seen in the queues (newest activity first), optionally only those named so. */
  async findPods(filter: PodFilter): Promise<PodSighting[]> {
    const perQueue = await Promise.all(this.source.list().map((entry) => this.podsOf(entry, filter)));
    const newest = new Map<string, PodSighting>();
    for (const sighting of perQueue.flat()) {
      const known = newest.get(sighting.uid);
      if (known === undefined || sighting.lastActivityAt > known.lastActivityAt) newest.set(sighting.uid, sighting);
    }
    return [...newest.values()].sort((a, b) => b.lastActivityAt - a.lastActivityAt);
  }

  /** Job counts of every node queue. */
  async counts(): Promise<NodeQueueCounts[]> {
    const entries = this.source.list();
    const [perQueue, workers] = await Promise.all([
      Promise.all(entries.map((entry) => entry.queue.getJobCounts(...JOB_STATES))),
      this.listing.workersPerQueue(entries.map((entry) => entry.queue)),
    ]);
    return entries.map((entry, i) => {
      const raw = perQueue[i] ?? {};
      const counts = Object.fromEntries(JOB_STATES.map((state) => [state, raw[state] ?? 0])) as Record<JobStateName, number>;
      return { node: entry.node, name: entry.name, counts, workers: workers?.get(entry.name) };
    });
  }

  /** Workers connected to each named node's queue. */
  async workersOfNodes(nodes: readonly string[]): Promise<Map<string, number | undefined>> {
    const entries = this.source.list().filter((entry) => nodes.includes(entry.node));
    const workers = await this.listing.workersPerQueue(entries.map((entry) => entry.queue));
    return new Map(entries.map((entry) => [entry.node, workers?.get(entry.name)] as const));
  }

  private async podsOf(entry: NodeQueue, filter: PodFilter): Promise<PodSighting[]> {
    const ids = [...(await idsByState(entry.queue, filter.limitPerState))];
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const [id] of ids) pipeline.hmget(entry.queue.toKey(id), 'data', 'timestamp', 'processedOn', 'finishedOn');
    const replies = (await pipeline.exec()) ?? [];
    const sightings: PodSighting[] = [];
    ids.forEach(([, state], index) => {
      const fields = replies[index]?.[1];
      if (!Array.isArray(fields)) return;
      const [rawData, ...times] = fields as (string | null)[];
      const data = parseJobData(rawData);
      if (data === undefined || !matches(data, filter)) return;
      const lastActivityAt = Math.max(0, ...times.map((t) => Number(t ?? 0)).filter(Number.isFinite));
      sightings.push({ uid: data.uid, namespace: data.namespace, name: data.name, node: entry.node, state, lastActivityAt });
    });
    return sightings;
  }
}

function matches(data: ReconcileJobData, filter: PodFilter): boolean {
  return (filter.namespace === undefined || data.namespace === filter.namespace) && (filter.name === undefined || data.name === filter.name);
}

/** Job IDs of the queue with their state; the newest `limit` per state when given. */
async function idsByState(queue: Queue, limit: number | undefined): Promise<Map<string, JobStateName>> {
  const end = limit === undefined ? -1 : limit - 1;
  const lists = await Promise.all(JOB_STATES.map(async (state) => [state, await queue.getRanges([state], 0, end, false)] as const));
  const ids = new Map<string, JobStateName>();
  for (const [state, list] of lists) {
    for (const id of list) if (!ids.has(id)) ids.set(id, state);
  }
  return ids;
}

async function snapshotOf(entry: NodeQueue, id: string, state: JobStateName): Promise<JobSnapshot | undefined> {
  const [job, logs] = await Promise.all([Job.fromId(entry.queue, id), entry.queue.getJobLogs(id)]);
  if (job === undefined) return undefined;
  return {
    node: entry.node,
    queueName: entry.name,
    id,
    state,
    data: asJobData(job.data),
    enqueuedAt: job.timestamp,
    ...(job.processedOn === undefined ? {} : { processedOn: job.processedOn }),
    ...(job.finishedOn === undefined ? {} : { finishedOn: job.finishedOn }),
    ...(job.failedReason ? { failedReason: job.failedReason } : {}),
    runsStarted: job.attemptsStarted,
    runs: logs.logs.map(parseRunRecord).filter((r): r is RunRecord => r !== undefined),
  };
}
