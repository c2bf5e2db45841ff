/**
 * A real Redis Cluster of a test's (or a benchmark's) own: N primaries (3 by default), no
 * replicas, each a Debian `redis-server` with `cluster-enabled yes` on a loopback port, its node
 * file in a temporary directory, joined by `redis-cli --cluster create`. Never the test cluster's
 * Redis: ports come from 7100–7199 (each port and its cluster bus port, port + 10000, free when
 * asked), and every process started is stopped by `stop()`.
 *
 * `cluster-require-full-coverage no`, as the chart's cluster runs: a shard whose primary is down
 * leaves the other shards serving their slots (with the default `yes`, every node refuses every
 * command while one slot is unserved). Without replicas there is no failover: a stopped primary's
 * slots are unserved until it is started again (`restartPrimary`, same port, same node file).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { parseClientList } from '../../../controllers/queue/client-list.js';
import { redisAnswers } from './private-redis.js';

/** One primary of the cluster. */
export interface ClusterPrimary {
  readonly port: number;
  /** The redis-server's process ID while it runs (for /proc/<pid>/stat), undefined while stopped. */
  readonly pid: number | undefined;
  /** A plain admin connection to this server alone (named `test-admin`). */
  readonly admin: Redis;
}

/** A running cluster. */
export interface RedisClusterHarness {
  readonly primaries: readonly ClusterPrimary[];
  /** `host:port` of every primary, for `--redis-cluster-nodes`. */
  readonly nodesText: string;
  readonly startupNodes: readonly { readonly host: string; readonly port: number }[];
  /** The names of the connections to one primary (CLIENT LIST reads one server), the harness's own admin connection left out. */
  clientNames(primary: ClusterPrimary): Promise<string[]>;
  /** The primary that owns `key`'s slot (asked of Redis: CLUSTER KEYSLOT and the slot map). */
  primaryOf(key: string): Promise<ClusterPrimary>;
  /** Stops one primary (SIGTERM, waits for its exit); its slots go unserved. */
  stopPrimary(primary: ClusterPrimary): Promise<void>;
  /** Starts a stopped primary again on its port with its node file (empty: no persistence). */
  restartPrimary(primary: ClusterPrimary): Promise<void>;
  /** Waits until every primary reports `cluster_state:ok` and knows every slot (after `form: false` and a join of the test's). */
  ready(): Promise<void>;
  /** Stops every server and removes the directory. */
  stop(): Promise<void>;
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Primaries; default 3. */
  readonly shards?: number;
  /** Extra `redis-server` arguments (e.g. `['--maxclients', '20000']`). */
  readonly serverArgs?: readonly string[];
  /** First port to try; default 7100 (ports up to 7199 are tried). */
  readonly firstPort?: number;
  /** The servers' password (`requirepass`, `masterauth`); the admin connections use it. Default none. */
  readonly password?: string;
  /** Join the servers into a cluster (default true); false leaves them started and unjoined, as the chart's pods before its hook. */
  readonly form?: boolean;
}

const HOST = '127.0.0.1';
/** The name of each primary's admin connection (`ClusterPrimary.admin`). */
const ADMIN_NAME = 'test-admin';

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, HOST, resolve);
    });
    return true;
  } catch {
    return false;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/** `count` ports from `first`..7199 whose port and cluster bus port (port + 10000) are free now. */
export async function freeClusterPorts(count: number, first = 7100): Promise<number[]> {
  const ports: number[] = [];
  for (let port = first; port < 7200 && ports.length < count; port += 1) {
    if ((await portFree(port)) && (await portFree(port + 10_000))) ports.push(port);
  }
  if (ports.length < count) throw new Error(`fewer than ${count} free port pairs (port, port + 10000) in ${first}–7199`);
  return ports;
}

class Primary implements ClusterPrimary {
  process: ChildProcess | undefined;
  readonly admin: Redis;

  constructor(
    readonly port: number,
    private readonly args: readonly string[],
    private readonly password: string | undefined,
  ) {
    this.admin = new Redis({ port, host: HOST, connectionName: ADMIN_NAME, maxRetriesPerRequest: 1, lazyConnect: true, ...(password === undefined ? {} : { password }) });
    this.admin.on('error', () => undefined); // a stopped primary: the test asks on purpose
  }

  get pid(): number | undefined {
    return this.process?.exitCode === null && this.process.signalCode === null ? this.process.pid : undefined;
  }

  async start(): Promise<void> {
    this.process = spawn('redis-server', [...this.args], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !(await redisAnswers(this.port, this.password)); i += 1) await sleep(50);
    if (!(await redisAnswers(this.port, this.password))) throw new Error(`redis-server did not answer on ${HOST}:${this.port}`);
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (child?.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
}

function serverArgs(port: number, dir: string, extra: readonly string[]): string[] {
  return [
    '--port', String(port), '--bind', HOST, '--dir', dir,
    '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000',
    '--cluster-require-full-coverage', 'no', '--save', '', '--appendonly', 'no', ...extra,
  ];
}

/** Waits until every primary reports `cluster_state:ok` and knows every slot. */
async function clusterReady(primaries: readonly Primary[]): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    const infos = await Promise.all(primaries.map((p) => p.admin.cluster('INFO').catch(() => '')));
    if (infos.every((info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_assigned:16384') && new RegExp(`cluster_known_nodes:${primaries.length}\\b`).test(info))) return;
    await sleep(50);
  }
  throw new Error('the Redis Cluster did not reach cluster_state:ok');
}

/** Starts the cluster (see this file's header); resolves once every primary serves the full slot map. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHarness> {
  const shards = options.shards ?? 3;
  const dir = mkdtempSync(path.join(tmpdir(), 'nodelet-redis-cluster-'));
  const ports = await freeClusterPorts(shards, options.firstPort);
  const auth = options.password === undefined ? [] : ['--requirepass', options.password, '--masterauth', options.password];
  const primaries = ports.map((port) => new Primary(port, serverArgs(port, dir, [...auth, ...(options.serverArgs ?? [])]), options.password));
  const stop = async (): Promise<void> => {
    for (const p of primaries) p.admin.disconnect();
    await Promise.all(primaries.map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(primaries.map((p) => p.start()));
    if (options.form ?? true) {
      const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...(options.password === undefined ? {} : { REDISCLI_AUTH: options.password }) } });
      if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stderr}${create.stdout}`);
      await clusterReady(primaries);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const byPort = new Map(primaries.map((p) => [p.port, p]));
  return {
    primaries,
    nodesText: ports.map((port) => `${HOST}:${port}`).join(','),
    startupNodes: ports.map((port) => ({ host: HOST, port })),
    clientNames: async (primary) => {
      const clients = parseClientList(String(await primary.admin.client('LIST')));
      return clients.map((c) => c.name ?? '').filter((name) => name !== ADMIN_NAME);
    },
    primaryOf: async (key) => {
      const asker = primaries.find((p) => p.pid !== undefined);
      if (asker === undefined) throw new Error('no primary runs');
      const slot = await asker.admin.cluster('KEYSLOT', key);
      const ranges = await asker.admin.cluster('SLOTS');
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
      const primary = owner === undefined ? undefined : byPort.get(owner);
      if (primary === undefined) throw new Error(`no primary owns slot ${slot}`);
      return primary;
    },
    stopPrimary: async (primary) => {
      await (primary as Primary).stop();
    },
    restartPrimary: async (primary) => {
      await (primary as Primary).start();
    },
    ready: () => clusterReady(primaries),
    stop,
  };
}
