/**
 * What the dashboard costs a fleet's Redis, for the Redis load benchmark (`redis-load.ts`): after a
 * size's windows, with every simulated node still connected, the dashboard's own code finds the
 * node queues (`QueueDirectory`: a SCAN of every primary) and reads the overview (`JobHistory.counts`:
 * every queue's job counts and connected workers), timed, with the Redis CPU it cost (every shard's
 * /proc/<pid>/stat). For comparison, the same workers asked the way the overview and bull-board's
 * queue list asked before (BullMQ's `getWorkersCount()` per queue: a listing of every client of
 * every server per queue), right after, on the same connection, for the first
 * {@link PER_QUEUE_SAMPLE} queues only: each of those asks lists every connection, so the whole
 * page the old way costs about queues ÷ sample times as much (at 5,000 nodes, minutes).
 */
import type { Queue } from 'bullmq';
import { pino } from 'pino';
import { connectTopology } from '../controllers/queue/redis-cluster.js';
import { JobHistory } from '../dashboard/job-history.js';
import { QueueDirectory } from '../dashboard/queue-directory.js';
import { ClientListing } from '../dashboard/queue-workers.js';
import { systemClock } from '../util/clock.js';
import type { BenchRedis } from './redis-topology.js';
import { shardCpuSeconds } from './redis-topology.js';

/** One measurement of the dashboard at one size. */
export interface DashboardSample {
  readonly topology: string;
  readonly nodes: number;
  readonly round: number;
  /** Queues the directory found, and the workers the overview saw connected (one per live agent). */
  readonly queuesFound: number;
  readonly workersSeen: number;
  readonly discover: Cost;
  readonly overview: Cost;
  /** The workers asked per queue through BullMQ (how the pages asked before), for {@link perQueueSampled} queues. */
  readonly perQueueWorkers: Cost;
  readonly perQueueSampled: number;
}

/** Queues asked the old way at every size. */
export const PER_QUEUE_SAMPLE = 100;

/** Wall time and Redis CPU (all shards) of one step. */
export interface Cost {
  readonly ms: number;
  readonly redisCpuMs: number;
}

async function costOf(redis: BenchRedis, step: () => Promise<unknown>): Promise<Cost> {
  const cpu = (): number => shardCpuSeconds(redis).reduce((sum, seconds) => sum + seconds, 0);
  const [cpu0, t0] = [cpu(), performance.now()];
  await step();
  return { ms: performance.now() - t0, redisCpuMs: (cpu() - cpu0) * 1000 };
}

/** Measures the dashboard against `redis` with `nodes` agents connected. */
export async function measureDashboard(redis: BenchRedis, nodes: number, round: number): Promise<DashboardSample> {
  const logger = pino({ level: 'silent' });
  const connection = connectTopology(redis.redisUrl, { maxRetriesPerRequest: 3, connectionName: 'nodelet-dashboard' }, redis.cluster === undefined ? {} : { cluster: redis.cluster });
  connection.on('error', () => undefined);
  const listener = { added: () => undefined, removed: () => undefined };
  const directory = new QueueDirectory({ redis: connection, layout: { prefix: 'nodelet', hashTagged: redis.cluster !== undefined }, intervalMs: 3_600_000, clock: systemClock, logger, listener });
  try {
    await connection.ping(); // connected, and on a cluster the slot map loaded: the scan's first try counts
    const discover = await costOf(redis, async () => {
      if (!(await directory.refresh())) throw new Error('the dashboard could not scan the queues');
    });
    const history = new JobHistory(directory, connection, new ClientListing(connection, systemClock));
    let workersSeen = 0;
    const overview = await costOf(redis, async () => {
      workersSeen = (await history.counts()).reduce((sum, q) => sum + (q.workers ?? 0), 0);
    });
    const queues: Queue[] = directory.list().map((entry) => entry.queue);
    const sampled = queues.slice(0, PER_QUEUE_SAMPLE);
    const perQueueWorkers = await costOf(redis, () => Promise.all(sampled.map((q) => q.getWorkersCount())));
    return { topology: redis.topology, nodes, round, queuesFound: queues.length, workersSeen, discover, overview, perQueueWorkers, perQueueSampled: sampled.length };
  } finally {
    await directory.stop();
    connection.disconnect();
  }
}

/** One line of a sample, as the benchmark prints it. */
export function dashboardLine(s: DashboardSample): string {
  const cost = (c: Cost): string => `${c.ms.toFixed(0)} ms, Redis CPU ${c.redisCpuMs.toFixed(0)} ms`;
  return `${s.topology} round ${s.round} nodes ${s.nodes} dashboard: found ${s.queuesFound} queues in ${cost(s.discover)}; overview (${s.workersSeen} workers connected) ${cost(s.overview)}; workers of ${s.perQueueSampled} queues asked per queue through BullMQ (before) ${cost(s.perQueueWorkers)}`;
}
