/**
 * Fault at fleet size: `../faults/redis-stop.test.ts` (Redis frozen with SIGSTOP for 60 s while pods
 * are created and deleted) repeated with 1,000 simulated node agents (`fleet-agent.ts`: nodelet's
 * real queue, the agent's wiring) on a 3-primary Redis Cluster of the test's own
 * (`../integration/helpers/redis-cluster.ts`), with one shard's primary gone: first frozen
 * (SIGSTOP: connections open, data kept), then stopped and started again empty (a crash of a
 * primary without persistence or replica: its nodes' jobs are gone, as `redis-flush.test.ts` for one
 * node). Each agent runs 5 pods; 5 s into each outage every agent creates 2 pods, updates one and
 * deletes one. What an operator
 * of a large fleet is promised (docs/redis.md):
 * - nodes of the other shards are unaffected: every one of their changes made during the outage is
 *   reconciled while it lasts, and none of their enqueues fails;
 * - the frozen shard's nodes depend on it: none of them has reconciled its changes when it returns
 *   (otherwise the figure below measures nothing);
 * - every node has converged within 30 s of the return, and nothing is lost: every pod's runtime
 *   generation is its latest, every deleted pod is gone, no job failed.
 * `FLEET_AGENTS=<n>` runs a smaller fleet (the figures then say so). Needs no test cluster.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { inPool } from '../../bench/stats.js';
import { startRedisCluster, type ClusterPrimary, type RedisClusterHarness } from '../integration/helpers/redis-cluster.js';
import { FleetAgent } from './fleet-agent.js';

const AGENTS = Number(process.env.FLEET_AGENTS ?? 1000);
const PODS_PER_AGENT = 5;
const OUTAGE_MS = 60_000;
const CHANGES_AT_MS = 5_000;
const CONVERGE_AFTER_RETURN_MS = 30_000;
const logger = pino({ level: 'silent' });

/** Polls `done` every 250 ms until it holds or `limitMs` passes; returns the ms it took, or undefined. */
async function within(limitMs: number, done: () => boolean): Promise<number | undefined> {
  const started = Date.now();
  for (;;) {
    if (done()) return Date.now() - started;
    if (Date.now() - started > limitMs) return undefined;
    await sleep(250);
  }
}

/** Connections to each primary, the test's own admin connection left out. */
async function connectionsPerPrimary(cluster: RedisClusterHarness): Promise<number[]> {
  return Promise.all(cluster.primaries.map(async (p) => (await cluster.clientNames(p)).length));
}

const sum = (xs: readonly number[]): number => xs.reduce((n, x) => n + x, 0);
const unconvergedOf = (agents: readonly FleetAgent[]): number => agents.reduce((n, a) => n + a.unconverged(), 0);

/** How a shard's primary goes away for the outage, and comes back. */
interface ShardFault {
  readonly name: string;
  stop(primary: ClusterPrimary): Promise<void>;
  resume(primary: ClusterPrimary): Promise<void>;
}

describe(`a 3-shard Redis Cluster with one primary gone for ${OUTAGE_MS / 1000} s under ${AGENTS} node agents`, () => {
  let cluster: RedisClusterHarness;
  const agents: FleetAgent[] = [];
  const shardOf = new Map<FleetAgent, ClusterPrimary>();
  /** Undoes a fault still in force (a test that failed mid-outage). */
  let undo: (() => Promise<void>) | undefined;

  before(async () => {
    cluster = await startRedisCluster({ serverArgs: ['--maxclients', '10000'] });
    for (let i = 0; i < AGENTS; i += 1) agents.push(new FleetAgent(`fleet-${i}`, { nodes: cluster.startupNodes }, logger));
    await inPool(agents, 20, async (agent) => {
      shardOf.set(agent, await cluster.primaryOf(`{nodelet:${agent.name}}`));
      await agent.start(agents.indexOf(agent) / AGENTS);
      for (let p = 0; p < PODS_PER_AGENT; p += 1) agent.createPod();
    });
  });

  after(async () => {
    await undo?.();
    await inPool(agents, 50, (agent) => agent.close());
    await cluster.stop();
  });

  /** Takes the primary `cluster.primaries[shard]` away for the outage while every agent changes its pods, and checks the promises above. */
  async function outage(t: { diagnostic(message: string): void }, fault: ShardFault, shard: number): Promise<void> {
    const settled = await within(120_000, () => unconvergedOf(agents) === 0);
    assert.ok(settled !== undefined, `the fleet never converged before the fault: ${unconvergedOf(agents)} pods behind`);
    t.diagnostic(`the fleet had converged before the fault (waited ${settled} ms for it)`);
    const target = cluster.primaries[shard]!;
    const down = agents.filter((a) => shardOf.get(a) === target);
    const up = agents.filter((a) => shardOf.get(a) !== target);
    assert.ok(down.length > 0 && up.length > 0, 'agents on the stopped shard and on the others');
    const before = new Map(agents.map((a) => [a, a.counts()]));
    const connectionsBefore = await connectionsPerPrimary(cluster);

    await fault.stop(target);
    undo = () => fault.resume(target);
    const stoppedAt = Date.now();
    await sleep(CHANGES_AT_MS);
    for (const agent of agents) {
      agent.createPod();
      agent.createPod();
      agent.updatePod();
      agent.deletePod();
    }
    const othersConverged = await within(stoppedAt + OUTAGE_MS - Date.now() - 1_000, () => unconvergedOf(up) === 0);
    const downBehind = down.filter((a) => a.unconverged() > 0).length;
    await sleep(Math.max(0, stoppedAt + OUTAGE_MS - Date.now()));
    undo = undefined;
    await fault.resume(target);
    const outageMs = Date.now() - stoppedAt;

    const failedSince = (group: readonly FleetAgent[]): number => group.reduce((n, a) => n + a.counts().failedEnqueues - (before.get(a)?.failedEnqueues ?? 0), 0);
    assert.ok(othersConverged !== undefined, `the other shards' ${up.length} nodes did not reconcile their changes during the outage: ${unconvergedOf(up)} pods behind`);
    assert.equal(failedSince(up), 0, "no enqueue of the other shards' nodes failed");
    assert.equal(downBehind, down.length, `every node of the stopped shard was still behind when it returned (${downBehind} of ${down.length})`);

    const convergedMs = await within(CONVERGE_AFTER_RETURN_MS, () => unconvergedOf(agents) === 0);
    const behind = agents.filter((a) => a.unconverged() > 0);
    const refusals = [...FleetAgent.failures].sort((x, y) => y[1] - x[1]).slice(0, 3).map(([m, n]) => `${n}× "${m}"`).join(', ');
    t.diagnostic(`enqueues refused so far, by error: ${refusals === '' ? 'none' : refusals}`);
    for (const agent of behind.slice(0, 3)) {
      const counts = await Promise.race([agent.queue.counts().then((c) => JSON.stringify(c), (err: unknown) => `counts failed: ${String(err)}`), sleep(5_000).then(() => 'counts hung 5 s')]);
      t.diagnostic(`${agent.name}: ${JSON.stringify(agent.counts())} queue ${counts}`);
    }
    assert.ok(convergedMs !== undefined, `${behind.length} nodes had not converged ${CONVERGE_AFTER_RETURN_MS} ms after the return (${unconvergedOf(agents)} pods behind; e.g. ${behind.slice(0, 3).map((a) => a.name).join(', ')})`);
    const failedJobs = await Promise.all(agents.map(async (a) => (await a.queue.counts()).failed));
    assert.equal(failedJobs.reduce((n, f) => n + f, 0), 0, 'no reconcile job failed');
    // Connections ioredis opened to other primaries while the shard was gone close at its next
    // slot-map refresh (`closeStrayConnections`): 2 per agent again, within a few seconds.
    let connectionsAfter = await connectionsPerPrimary(cluster);
    for (let waited = 0; sum(connectionsAfter) > 2 * AGENTS && waited < 10_000; waited += 500) {
      await sleep(500);
      connectionsAfter = await connectionsPerPrimary(cluster);
    }
    t.diagnostic(`connections per primary: ${connectionsBefore.join(' / ')} before the fault, ${connectionsAfter.join(' / ')} once converged (${AGENTS} agents)`);
    assert.ok(sum(connectionsAfter) <= 2 * AGENTS, `the agents hold ${sum(connectionsAfter)} connections 10 s after converging, more than 2 each: ${connectionsAfter.join(' / ')}`);
    const runs = agents.reduce((n, a) => n + a.counts().runs - (before.get(a)?.runs ?? 0), 0);
    t.diagnostic(
      `${fault.name}: ${AGENTS} agents (${down.length} on the stopped shard, ${up.length} on the others), ${PODS_PER_AGENT} pods each before; primary of port ${target.port} gone ${outageMs} ms; ` +
        `the other shards' nodes reconciled their ${up.length * 4} changes ${othersConverged} ms after they were made, during the outage; ` +
        `every node converged ${convergedMs} ms after the primary was back (polled every 250 ms); ${runs} reconciles since the fault; enqueues refused on the stopped shard's nodes: ${failedSince(down)} (covered by the resync)`,
    );
  }

  it("frozen (SIGSTOP, data kept): the other shards' nodes keep reconciling, every node converges within 30 s of SIGCONT, nothing lost", async (t) => {
    await outage(t, {
      name: 'SIGSTOP',
      stop: (p) => { process.kill(p.pid!, 'SIGSTOP'); return Promise.resolve(); },
      resume: (p) => { process.kill(p.pid!, 'SIGCONT'); return Promise.resolve(); },
    }, 0);
  });

  it("stopped and started again empty (no persistence): the same, the lost jobs recreated by the queue's resync", async (t) => {
    await outage(t, { name: 'SIGTERM, restarted empty', stop: (p) => cluster.stopPrimary(p), resume: (p) => cluster.restartPrimary(p) }, 1);
  });
});
