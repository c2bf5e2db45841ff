/**
 * The reconcile queue and the dashboard on a real 3-primary Redis Cluster of the test's own
 * (`helpers/redis-cluster.ts`: Debian's redis-server on loopback, `redis-cli --cluster create`),
 * with six simulated nodes, two per shard, each running nodelet's real queue as the agent does
 * (`--redis-cluster-nodes`): each node's jobs run on its own node and its keys live on one shard
 * only; per-UID deduplication still holds; the dashboard's discovery finds every node's queue across
 * the shards and reads a pod's timeline from any of them; and with one shard's primary stopped, the
 * nodes of the other shards keep enqueueing and running, the dashboard withdraws no queue, and the
 * stopped shard's nodes reconcile again once it is back (empty: no persistence).
 * Needs no test cluster. Counts and states, not timings: every wait is an "eventually" limit.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from 'ioredis';
import { createReconcileQueue, type ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import { ClusterFamily, clusterOptions, connectTopology } from '../../controllers/queue/redis-cluster.js';
import { JobHistory } from '../../dashboard/job-history.js';
import { QueueDirectory } from '../../dashboard/queue-directory.js';
import { ClientListing } from '../../dashboard/queue-workers.js';
import { systemClock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { ReconcileResult } from '../../util/reconcile.js';
import { assertNoOverlap, eventually, logger, pod, Recorder, type Run } from './helpers/reconcile-queue-fixture.js';
import { startRedisCluster, type ClusterPrimary, type RedisClusterHarness } from './helpers/redis-cluster.js';

const PREFIX = 'nodelet';
const NODES_PER_SHARD = 2;

/** One simulated agent: its name, its queue, the shard its queue lives on, and its recorder. */
interface SimAgent {
  readonly name: string;
  readonly queue: ReconcileQueue;
  readonly shard: ClusterPrimary;
  readonly recorder: Recorder;
  /** Held by a test to keep one UID's run active; released by calling it. */
  gates: Map<string, Promise<void>>;
}

let cluster: RedisClusterHarness;
const agents: SimAgent[] = [];
let dashboardRedis: Cluster;
let directory: QueueDirectory;

/** Node names until every shard holds NODES_PER_SHARD of them (where `{nodelet:<node>}` hashes). */
async function nodesPerShard(): Promise<{ name: string; shard: ClusterPrimary }[]> {
  const picked: { name: string; shard: ClusterPrimary }[] = [];
  for (let i = 0; picked.length < cluster.primaries.length * NODES_PER_SHARD && i < 1000; i += 1) {
    const name = `sim-${i}`;
    const shard = await cluster.primaryOf(`{${PREFIX}:${name}}`);
    if (picked.filter((p) => p.shard === shard).length < NODES_PER_SHARD) picked.push({ name, shard });
  }
  return picked;
}

function startAgent(name: string, shard: ClusterPrimary): Promise<SimAgent> {
  const recorder = new Recorder();
  const agent: SimAgent = {
    name,
    shard,
    recorder,
    gates: new Map(),
    queue: createReconcileQueue({
      redisUrl: 'redis://ignored',
      cluster: { nodes: cluster.startupNodes },
      nodeName: name,
      concurrency: 4,
      logger,
      shutdownTimeoutMs: 2_000,
      redisStepTimeoutMs: 2_000,
    }),
  };
  const reconciler = recorder.reconciler(name, async (ref): Promise<ReconcileResult> => {
    await agent.gates.get(ref.uid);
    return {};
  });
  return agent.queue.start(reconciler).then(() => agent);
}

const podsOf = (agent: SimAgent, n: number, tag: string): PodKey[] => Array.from({ length: n }, (_, i) => pod(`${agent.name}-${tag}-${i}`));
const ranUids = (runs: readonly Run[]): Set<string> => new Set(runs.map((r) => r.uid));

/** Keys matching `pattern` on one primary alone (SCAN reads one server). */
async function keysOn(primary: ClusterPrimary, pattern: string): Promise<number> {
  let cursor = '0';
  let count = 0;
  do {
    const [next, keys] = await primary.admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    count += keys.length;
    cursor = next;
  } while (cursor !== '0');
  return count;
}

/** The names of the clients connected to one primary, the test's own and the dashboard's left out. */
async function clientNamesOn(primary: ClusterPrimary): Promise<string[]> {
  return (await cluster.clientNames(primary)).filter((name) => name !== 'nodelet-dashboard');
}

before(async () => {
  cluster = await startRedisCluster();
  for (const { name, shard } of await nodesPerShard()) agents.push(await startAgent(name, shard));
  dashboardRedis = connectTopology('redis://ignored', { maxRetriesPerRequest: 3, connectionName: 'nodelet-dashboard' }, { cluster: { nodes: cluster.startupNodes } }) as Cluster;
  dashboardRedis.on('error', () => undefined);
  directory = new QueueDirectory({
    redis: dashboardRedis,
    layout: { prefix: PREFIX, hashTagged: true },
    intervalMs: 600_000,
    clock: systemClock,
    logger,
    listener: { added: () => undefined, removed: () => undefined },
  });
});

after(async () => {
  await directory.stop();
  await Promise.all(agents.map((a) => a.queue.close()));
  dashboardRedis.disconnect();
  await cluster.stop();
});

void describe('the reconcile queue on a 3-shard Redis Cluster', () => {
  it("runs every node's jobs on that node, and keeps each node's queue keys on one shard", async () => {
    assert.equal(new Set(agents.map((a) => a.shard)).size, 3, 'the simulated nodes cover every shard');
    for (const agent of agents) for (const ref of podsOf(agent, 5, 'first')) await agent.recorder.event(agent.queue, ref, 'created');
    for (const agent of agents) {
      await eventually(() => ranUids(agent.recorder.runs).size === 5, `${agent.name} reconciled its 5 pods`);
      assert.ok([...ranUids(agent.recorder.runs)].every((uid) => uid.startsWith(`${agent.name}-`)), `${agent.name} ran only its own pods`);
    }
    for (const agent of agents) {
      const perPrimary = await Promise.all(cluster.primaries.map((p) => keysOn(p, `{${PREFIX}:${agent.name}}:*`)));
      const owner = cluster.primaries.indexOf(agent.shard);
      assert.ok((perPrimary[owner] ?? 0) > 0, `${agent.name}'s keys are on its shard`);
      assert.deepEqual(perPrimary.filter((_, i) => i !== owner), [0, 0], `${agent.name}'s keys are on no other shard`);
      assert.equal(await keysOn(agent.shard, `${PREFIX}:nodelet-reconcile-${agent.name}:*`), 0, 'no untagged key');
    }
  });

  it("holds 2 connections per agent, both on its queue's shard: the queue's commands and the worker's blocking reads", async () => {
    // Before keyless commands were pinned to the queue's shard, about 5 per agent: ioredis' ready
    // check and BullMQ's INFO on random nodes, the orphan recovery's CLIENT LIST on every node.
    // A worker's blocking connection is named `{nodelet:<node>}:<base64 queue>:w:<worker>`: read as `nodelet:<node>`.
    const owner = (name: string): string => /^\{([^}]*)\}:[^:]*:w:/.exec(name)?.[1] ?? name;
    const want = cluster.primaries.map((p) =>
      agents
        .filter((a) => a.shard === p)
        .flatMap((a) => ['nodelet-queue', `${PREFIX}:${a.name}`])
        .sort(),
    );
    let seen: string[][] = [];
    const settled = async (): Promise<boolean> => {
      seen = await Promise.all(cluster.primaries.map(async (p) => (await clientNamesOn(p)).map(owner).sort()));
      return JSON.stringify(seen) === JSON.stringify(want);
    };
    await eventually(settled, 'each shard holds the connections of its own agents and no other').catch(() => undefined);
    assert.deepEqual(seen, want, 'per shard: one nodelet-queue and one blocking connection per agent of that shard');
  });

  it('holds per-UID deduplication: while a UID runs, ten more events become exactly one more run, never in parallel', async () => {
    for (const agent of agents.filter((_, i) => i % NODES_PER_SHARD === 0)) {
      const ref = pod(`${agent.name}-dedup`);
      let release: () => void = () => undefined;
      agent.gates.set(ref.uid, new Promise<void>((resolve) => { release = resolve; }));
      await agent.recorder.event(agent.queue, ref, 'created');
      await eventually(async () => (await agent.queue.counts()).active === 1, `${agent.name}: the UID's first run is active`);
      for (let i = 0; i < 10; i += 1) await agent.recorder.event(agent.queue, ref, `burst ${i}`);
      agent.gates.delete(ref.uid);
      release();
      await eventually(async () => {
        const c = await agent.queue.counts();
        return agent.recorder.runsOf(ref.uid).length >= 2 && c.active + c.waiting + c.delayed === 0;
      }, `${agent.name}: the UID's runs are over`);
      const runs = agent.recorder.runsOf(ref.uid);
      assert.equal(runs.length, 2, `${agent.name}: one run, then one for all ten events`);
      assert.equal(runs[1]!.version, 11, 'the second run saw the newest state');
      assertNoOverlap(runs);
    }
  });

  it("lets the dashboard find every node's queue across the shards, and a pod's jobs on any shard", async () => {
    assert.equal(await directory.refresh(), true);
    assert.deepEqual(directory.list().map((q) => q.node), agents.map((a) => a.name).sort());
    const history = new JobHistory(directory, dashboardRedis, new ClientListing(dashboardRedis, systemClock));
    for (const agent of agents) {
      const uid = `${agent.name}-first-0`;
      const jobs = await history.jobsOfPod(uid);
      assert.ok(jobs.length >= 1, `the timeline of ${uid} has its job`);
      assert.ok(jobs.every((j) => j.node === agent.name && j.runs.length >= 1), `${uid}'s jobs are ${agent.name}'s, with their run records`);
    }
    const counts = await history.counts();
    assert.equal(counts.length, agents.length);
    assert.ok(counts.every((c) => c.workers === 1), 'each queue has its worker, found on its shard');
  });

  it("keeps the other shards' nodes working while one shard's primary is stopped, and its own nodes once it is back", async () => {
    const stopped = agents[0]!.shard;
    await cluster.stopPrimary(stopped);
    const others = agents.filter((a) => a.shard !== stopped);
    assert.equal(others.length, 4);
    for (const agent of others) for (const ref of podsOf(agent, 3, 'outage')) await agent.recorder.event(agent.queue, ref, 'created during the outage');
    for (const agent of others) {
      await eventually(() => [...ranUids(agent.recorder.runs)].filter((uid) => uid.includes('-outage-')).length === 3, `${agent.name} reconciled its 3 new pods`);
    }
    const down = agents.filter((a) => a.shard === stopped);
    for (const agent of down) await assert.rejects(agent.queue.counts(), `${agent.name}'s queue is on the stopped shard`);
    assert.equal(await directory.refresh(), true);
    assert.deepEqual(directory.list().map((q) => q.node), agents.map((a) => a.name).sort(), 'a partial scan withdraws no queue');
    await cluster.restartPrimary(stopped);
    for (const agent of down) {
      const ref = pod(`${agent.name}-after-outage`);
      await eventually(async () => {
        await agent.recorder.event(agent.queue, ref, 'after the outage').catch(() => undefined);
        return agent.recorder.runsOf(ref.uid).length > 0;
      }, `${agent.name} reconciles again once its shard is back`, 30_000);
    }
  });

  it("settles a cluster client's connect once its shard is back, though ioredis retried on its own meanwhile", async () => {
    // ioredis' ready check (CLUSTER INFO, sent to the home shard) fails while that shard is down;
    // ioredis then reconnects by itself and left the first attempt's promise pending for good.
    // BullMQ awaits that promise when it restores its blocking connection: workers of a restarted
    // shard waited for jobs forever (the fleet outage test, 1,000 agents).
    const home = `{${PREFIX}:connecting-agent}`;
    const shard = await cluster.primaryOf(home);
    const client = new ClusterFamily(cluster.startupNodes, { ...clusterOptions('redis://ignored', { maxRetriesPerRequest: 1, connectionName: 'test-connecting' }), lazyConnect: true }, home);
    client.on('error', () => undefined);
    await cluster.stopPrimary(shard);
    try {
      let settled: string | undefined;
      const connecting = client.connect().then(() => (settled = 'resolved'), (err: unknown) => (settled = `rejected: ${String(err)}`));
      await sleep(3_000);
      assert.equal(settled, undefined, 'no ready client while its home shard is down');
      await cluster.restartPrimary(shard);
      await Promise.race([connecting, sleep(20_000)]);
      assert.equal(settled, 'resolved', 'connect() settled within 20 s of the shard coming back');
      assert.equal(client.status, 'ready');
      assert.equal(await client.set(`${home}:probe`, 'x'), 'OK');
    } finally {
      if (shard.pid === undefined) await cluster.restartPrimary(shard);
      client.dropAll();
    }
  });

  it('keeps no connection of a cluster client outside its node pool after a reconnect (an old node ending removed the new one)', async () => {
    // BullMQ reconnects its blocking cluster client by disconnect() and connect() at once; the old
    // nodes' `end` arrived after the new nodes were pooled and removed them by address, their
    // sockets open for good: one extra idle connection per agent after each such reconnect.
    const home = `{${PREFIX}:reconnecting-agent}`;
    const name = 'test-reconnecting';
    const client = new ClusterFamily(cluster.startupNodes, clusterOptions('redis://ignored', { maxRetriesPerRequest: 1, connectionName: name }), home);
    client.on('error', () => undefined);
    try {
      await eventually(() => client.status === 'ready', 'the client connected');
      for (let round = 0; round < 3; round += 1) {
        assert.equal(await client.set(`${home}:probe`, String(round)), 'OK');
        client.disconnect(); // as BullMQ's cluster reconnect does it: disconnect, then connect at once
        await client.connect();
      }
      assert.equal(await client.get(`${home}:probe`), '2');
      await sleep(500);
      const held = (await Promise.all(cluster.primaries.map(async (p) => clientNamesOn(p)))).flat().filter((n) => n === name).length;
      const pooled = client.nodes('all').filter((n) => n.status === 'ready').length;
      assert.equal(pooled, 1, "the client's pool holds one connected node, its home's");
      assert.equal(held, pooled, 'the servers see as many connections as the pool holds');
    } finally {
      client.dropAll();
    }
  });

  it("lets an agent's process exit when its queue closes just after its shard's primary came back", async () => {
    // The queue's blocking cluster client, closed while it was finding the cluster again, stayed
    // `disconnecting` for good with BullMQ's blocking read parked in it: the worker's graceful close
    // waited on that read, its lock-renewal timer kept running, and the process never exited.
    const name = 'exiting-agent';
    const shard = await cluster.primaryOf(`{${PREFIX}:${name}}`);
    const child = spawn(process.execPath, ['--import', 'tsx', new URL('./helpers/cluster-queue-agent.ts', import.meta.url).pathname, cluster.nodesText, name], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = once(child, 'exit');
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (out += chunk));
    try {
      await eventually(() => out.includes('started') || child.exitCode !== null, 'the agent started its queue', 30_000);
      assert.equal(child.exitCode, null, 'the agent exited early');
      await sleep(1_000);
      await cluster.stopPrimary(shard);
      await sleep(3_000); // the agent's connections notice, its cluster client looks for the cluster again
      await cluster.restartPrimary(shard);
      child.kill('SIGTERM');
      const exitedInTime = await Promise.race([exited.then(() => true), sleep(20_000).then(() => false)]);
      assert.ok(exitedInTime, `the agent's process was still alive 20 s after SIGTERM (its queue ${out.includes('closed') ? 'had closed' : 'had not closed'})`);
      assert.ok(out.includes('closed'), 'the queue closed before the process exited');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
