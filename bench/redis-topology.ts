/**
 * The Redis under a benchmark, in either topology, private to it: `single`, one redis-server on a
 * free loopback port (`redis-server.ts`); `cluster`, a 3-primary Redis Cluster on loopback ports
 * 7100–7199 (`test/integration/helpers/redis-cluster.ts`, the integration test's harness). Each
 * server's INFO is read through an admin connection of its own, and its CPU from
 * `/proc/<pid>/stat` (utime + stime), per shard.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { ClusterSettings } from '../controllers/queue/redis-cluster.js';
import { startRedisCluster } from '../test/integration/helpers/redis-cluster.js';
import { freePort, startRedis } from './redis-server.js';

export type Topology = 'single' | 'cluster';
export const TOPOLOGIES: readonly Topology[] = ['single', 'cluster'];

/** One Redis server of the topology: a shard's primary, or the one Redis. */
export interface BenchShard {
  readonly admin: Redis;
  /** The redis-server's process ID, for /proc/<pid>/stat. */
  readonly pid: number;
}

/** A running topology. */
export interface BenchRedis {
  readonly topology: Topology;
  /** What the simulated agents get: the URL, and the cluster's nodes on a cluster. */
  readonly redisUrl: string;
  readonly cluster: ClusterSettings | undefined;
  readonly shards: readonly BenchShard[];
  /** FLUSHALL on every shard. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system) the process has used, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return cpuSecondsOfStat(stat, CLOCK_TICKS);
}

/** CPU seconds each shard's redis-server has used, in shard order. */
export function shardCpuSeconds(redis: BenchRedis): number[] {
  return redis.shards.map((shard) => processCpuSeconds(shard.pid));
}

/** utime + stime of a /proc/<pid>/stat line, in seconds (the command name may hold spaces and parentheses). */
export function cpuSecondsOfStat(stat: string, ticksPerSecond: number): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ", field 3 (state) is index 0: utime (14) and stime (15) are indexes 11 and 12.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('unreadable /proc/<pid>/stat');
  return (utime + stime) / ticksPerSecond;
}

const MAX_CLIENTS = ['--maxclients', '20000'];

async function startSingle(): Promise<BenchRedis> {
  const port = await freePort();
  const child: ChildProcess = await startRedis(port);
  const redisUrl = `redis://127.0.0.1:${port}`;
  const admin = new Redis(redisUrl, { connectionName: 'bench-info' });
  return {
    topology: 'single',
    redisUrl,
    cluster: undefined,
    shards: [{ admin, pid: child.pid ?? 0 }],
    flush: async () => {
      await admin.flushall();
    },
    stop: () => {
      admin.disconnect();
      child.kill('SIGTERM');
      return Promise.resolve();
    },
  };
}

async function startCluster(): Promise<BenchRedis> {
  const harness = await startRedisCluster({ serverArgs: MAX_CLIENTS });
  const shards = harness.primaries.map((p) => ({ admin: p.admin, pid: p.pid ?? 0 }));
  for (const shard of shards) await shard.admin.client('SETNAME', 'bench-info');
  return {
    topology: 'cluster',
    redisUrl: 'redis://127.0.0.1',
    cluster: { nodes: harness.startupNodes },
    shards,
    flush: async () => {
      await Promise.all(shards.map((s) => s.admin.flushall()));
    },
    stop: () => harness.stop(),
  };
}

/** Starts the topology's private Redis. */
export function startBenchRedis(topology: Topology): Promise<BenchRedis> {
  return topology === 'single' ? startSingle() : startCluster();
}
