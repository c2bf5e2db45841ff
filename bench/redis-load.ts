/**
 * The Redis load benchmark (`npm run bench:redis`; not a test: it asserts nothing about speed).
 * What a fleet's queues cost Redis per node: N simulated nodes (`redis-sim-node.ts`: nodelet's real
 * reconcile queue with the agent's options and its two connections, the NodeAgent health sample
 * every 2 s, the periodic resync of every pod every 60 s, phases spread evenly over the nodes, a
 * 10 ms reconcile), against private Redis servers this script starts on loopback (never the test
 * cluster's Redis), in each topology of `--topologies` (`redis-topology.ts`): `single`, one
 * redis-server; `cluster`, a 3-primary Redis Cluster, the agents on `--redis-cluster-nodes`.
 * Where one agent's commands come from: `redis-idle.ts`.
 *
 * The rule for simulating the fleet: every simulated node runs the real queue code, whatever the
 * size; no command mix is replayed and no figure projected from a slice. The generator's own CPU is
 * reported per window: when it nears a core per process, the generator, not Redis, is the limit
 * (the figures of that window say so, and the size is too large for one generator).
 *
 * Per topology, size and round (topologies and sizes interleaved, the order reversed every other
 * round, a fresh FLUSHALL on every shard each time): start the nodes, each adds its pods (three
 * events each, as below), wait until every one of those events has had its run, settle 5 s, then
 * one window per phase (`--phases`, all three by default),
 * each `INFO` before and after:
 *   idle   no pod changes;
 *   churn  `--churn-rate` pods created and as many deleted per second across the fleet, spread over
 *          the nodes in turn and over the second in ticks of 100 ms (an add makes three enqueues —
 *          API event, PLEG, status — a delete two). The default, 50, is the pod creation and deletion
 *          throughput of Kubernetes' own 5,000-node scale tests (ClusterLoader2's load test as the
 *          kops scale jobs of kubernetes/test-infra run it: CL2_LOAD_TEST_THROUGHPUT and
 *          CL2_DELETE_TEST_THROUGHPUT 50);
 *   burst  every node gets `--burst` new pods at once (a rollout), window starts with it; the
 *          window reports when every burst pod had started its first reconcile ("drained").
 *
 * Each window reports commands/s, connections and memory (INFO, summed over the shards), Redis CPU
 * per shard (/proc/<pid>/stat), the pod events' enqueue → run latency (p50/p99/max), and the
 * generator's own event-loop delay (p99): every simulated agent shares the generator's one thread,
 * which a real agent does not, so a latency near that delay is the generator's, not Redis's.
 *
 *   node --import tsx bench/redis-load.ts [--topologies single,cluster] [--sizes 100,1000,5000]
 *     [--rounds 3] [--window-s 20] [--burst-window-s S] [--pods 30] [--churn-rate 50] [--burst 30] [--phases idle,churn,burst]
 *     [--doc PATH | --no-doc]
 * An idle window should last a resync period (`--window-s 60`) to hold each node's resync once.
 */
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeResultsBlock } from './report.js';
import { burstDrain, Counters, SimNode } from './redis-sim-node.js';
import { dashboardLine, measureDashboard, type DashboardSample } from './redis-dashboard.js';
import { ProbeProcess } from './redis-probe-client.js';
import { inPool, summarize } from './stats.js';
import { shardCpuSeconds, startBenchRedis, TOPOLOGIES, type BenchRedis, type Topology } from './redis-topology.js';
import {
  PHASES,
  REDIS_BEGIN_MARKER,
  REDIS_END_MARKER,
  nodeFigures,
  parseInfo,
  renderRedisResults,
  sumInfo,
  topCommands,
  type Phase,
  type RedisInfo,
  type WindowSample,
} from './redis-load-report.js';
import { spreadText } from './compare.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
const SETTLE_MS = 5_000;
/** How long the nodes' first pods may take to run before a size is given up (5,000 nodes' 150,000 pods take minutes here). */
const POPULATE_LIMIT_MS = 15 * 60_000;

/** Waits until every pod event so far has had its run (the nodes' first pods), then {@link SETTLE_MS}. */
async function settle(counters: Counters, size: number): Promise<void> {
  const started = Date.now();
  while (counters.outstandingEvents > 0) {
    if (Date.now() - started > POPULATE_LIMIT_MS) throw new Error(`${counters.outstandingEvents} pod events still without a run ${POPULATE_LIMIT_MS} ms after ${size} nodes started`);
    await sleep(500);
  }
  console.log(`${size} nodes: every first pod ran ${Date.now() - started} ms after the last node started`);
  await sleep(SETTLE_MS);
}

interface Settings {
  readonly topologies: readonly Topology[];
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly windowSeconds: number;
  /** The burst window's length (a large fleet's burst takes longer to drain than the other windows need). */
  readonly burstWindowSeconds: number;
  readonly podsPerNode: number;
  /** Pods created, and as many deleted, per second across the fleet in the churn window. */
  readonly churnRate: number;
  readonly burstPods: number;
  readonly phases: readonly Phase[];
  /** Agents run in the latency probe's own process (`redis-probe.ts`), part of the size; 0: none. */
  readonly probeNodes: number;
  readonly doc: string | undefined;
}

/** INFO of every shard, summed. */
async function info(redis: BenchRedis): Promise<RedisInfo> {
  return sumInfo(await Promise.all(redis.shards.map(async (shard) => parseInfo(await shard.admin.info('everything')))));
}

function cpuSecondsNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

interface RunContext {
  readonly redis: BenchRedis;
  readonly settings: Settings;
  readonly samples: WindowSample[];
  readonly dashboards: DashboardSample[];
}

interface WindowFixed {
  readonly round: number;
  readonly nodes: SimNode[];
  readonly phase: Phase;
  readonly baselineClients: number;
  readonly baselineMemoryBytes: number;
  readonly counters: Counters;
  readonly probe: ProbeProcess | undefined;
  /** Nodes in all: the generator's and the probe's. */
  readonly size: number;
}

function probeText(probe: WindowSample['probe']): string {
  if (probe === undefined) return '';
  const l = probe.latency;
  const latency = l.count === 0 ? 'none' : `p50 ${l.p50Ms.toFixed(1)} p99 ${l.p99Ms.toFixed(1)} max ${l.maxMs.toFixed(1)} ms (${l.count})`;
  const drain = probe.burstOutstanding === undefined ? '' : probe.burstDrainMs === undefined ? `, ${probe.burstOutstanding} burst pods never reconciled` : `, burst drained in ${probe.burstDrainMs.toFixed(0)} ms`;
  return `; probe (${probe.agents} agents, own process): enqueue → run ${latency}, event-loop delay p99 ${probe.loopDelayP99Ms.toFixed(1)} ms${drain}`;
}

function windowLine(ctx: RunContext, sample: WindowSample, counters: Counters): string {
  const f = nodeFigures(sample);
  const latency = sample.latency;
  const latencyText = latency === undefined || latency.count === 0 ? 'none' : `p50 ${latency.p50Ms.toFixed(1)} p99 ${latency.p99Ms.toFixed(1)} max ${latency.maxMs.toFixed(1)} ms (${latency.count})`;
  const drain = sample.burstOutstanding === undefined ? '' : sample.burstDrainMs === undefined ? `, burst not drained: ${sample.burstOutstanding} pods never reconciled` : `, burst drained in ${sample.burstDrainMs.toFixed(0)} ms`;
  return (
    `${ctx.redis.topology} round ${sample.round} nodes ${sample.nodes} ${sample.phase}: ${f.connectionsPerNode.toFixed(2)} conn/node, ${(f.memoryBytesPerNode / 1024).toFixed(1)} KiB/node, ` +
    `${f.commandsPerSecondPerNode.toFixed(2)} cmd/s/node, Redis CPU ${f.redisCpuPercent.toFixed(1)} % (per shard, /proc: ${(sample.shardCpuPercent ?? []).map((c) => c.toFixed(1)).join(' / ')}), ` +
    `enqueue → run ${latencyText}${drain}, generator CPU ${f.generatorCpuPercent.toFixed(0)} %, event-loop delay p99 ${(sample.loopDelayP99Ms ?? 0).toFixed(1)} ms, ` +
    `ran ${sample.runs} of ${sample.enqueues} enqueues, ${sample.jobsInRedis} jobs kept, ${counters.failedEnqueues} failed enqueues so far${probeText(sample.probe)}; ${topCommands(sample, 4)}`
  );
}

async function measure(ctx: RunContext, fixed: WindowFixed, during: () => void): Promise<void> {
  const { counters } = fixed;
  const before = await info(ctx.redis);
  const shardCpu0 = shardCpuSeconds(ctx.redis);
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const [enq0, runs0, cpu0, t0, latency0, started] = [counters.enqueues, counters.runs, cpuSecondsNow(), Date.now(), counters.latenciesMs.length, performance.now()];
  fixed.probe?.windowStart(fixed.phase === 'churn', fixed.phase === 'burst' ? ctx.settings.burstPods : 0);
  during();
  await sleep((fixed.phase === 'burst' ? ctx.settings.burstWindowSeconds : ctx.settings.windowSeconds) * 1000);
  loopDelay.disable();
  const probed = await fixed.probe?.windowEnd();
  const after = await info(ctx.redis);
  const seconds = (Date.now() - t0) / 1000;
  const shardCpuPercent = shardCpuSeconds(ctx.redis).map((cpu, i) => ((cpu - (shardCpu0[i] ?? 0)) / seconds) * 100);
  const generatorCpuSeconds = cpuSecondsNow() - cpu0;
  const kept: number[] = [];
  await inPool(fixed.nodes, 20, async (n) => { kept.push(await n.jobsKept()); });
  const sample: WindowSample = {
    topology: ctx.redis.topology, shardCpuPercent, latency: summarize(counters.latenciesMs.slice(latency0)),
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    ...(probed === undefined ? {} : { probe: { agents: ctx.settings.probeNodes, latency: summarize(probed.latenciesMs), loopDelayP99Ms: probed.loopDelayP99Ms, ...(probed.burstOutstanding === undefined ? {} : { burstOutstanding: probed.burstOutstanding }), ...(probed.burstDrainMs === undefined ? {} : { burstDrainMs: probed.burstDrainMs }) } }),
    ...(fixed.phase === 'burst' ? burstDrain(counters, started) : {}),
    round: fixed.round, nodes: fixed.size, phase: fixed.phase, seconds, before, after,
    baselineClients: fixed.baselineClients, baselineMemoryBytes: fixed.baselineMemoryBytes,
    enqueues: counters.enqueues - enq0, runs: counters.runs - runs0, jobsInRedis: kept.reduce((a, b) => a + b, 0), generatorCpuSeconds,
  };
  ctx.samples.push(sample);
  console.log(windowLine(ctx, sample, counters));
}

const CHURN_TICK_MS = 100;

/** Creates and deletes `rate` pods per second across `nodes`, in turn, every {@link CHURN_TICK_MS}; returns the stop. */
function startChurn(nodes: readonly SimNode[], rate: number): () => void {
  let next = 0;
  let owed = 0;
  const timer = setInterval(() => {
    owed += (rate * CHURN_TICK_MS) / 1000;
    for (; owed >= 1; owed -= 1) {
      const node = nodes[next % nodes.length]!;
      next += 1;
      node.addPod();
      node.deletePod();
    }
  }, CHURN_TICK_MS);
  return () => { clearInterval(timer); };
}

async function runSize(ctx: RunContext, round: number, size: number): Promise<void> {
  await ctx.redis.flush();
  const empty = await info(ctx.redis);
  const counters = new Counters();
  // Resync phases spread evenly: agents' resyncs are uncorrelated, and even spreading gives
  // every window its expected share of them instead of a random one.
  const phaseOf = (i: number): number => (i + 0.5) / size;
  const probed = Math.min(ctx.settings.probeNodes, size);
  const nodes = Array.from({ length: size - probed }, (_, i) => new SimNode(`sim-${i}`, ctx.redis.redisUrl, counters, ctx.redis.cluster));
  let probe: ProbeProcess | undefined;
  try {
    if (probed > 0) {
      const indexes = Array.from({ length: probed }, (_, i) => size - probed + i);
      probe = await ProbeProcess.start({ redisUrl: ctx.redis.redisUrl, cluster: ctx.redis.cluster, names: indexes.map((i) => `sim-${i}`), podsPerNode: ctx.settings.podsPerNode, phases: indexes.map(phaseOf) });
    }
    await inPool(nodes, 20, (n) => n.start(ctx.settings.podsPerNode, phaseOf(nodes.indexOf(n))));
    await settle(counters, size);
    const fixed = { round, nodes, baselineClients: empty.connectedClients, baselineMemoryBytes: empty.usedMemoryBytes, counters, probe, size };
    let stopChurn = (): void => undefined;
    for (const phase of ctx.settings.phases) {
      await measure(ctx, { ...fixed, phase }, () => {
        if (phase === 'churn') stopChurn = startChurn(nodes, ctx.settings.churnRate);
        else if (phase === 'burst') for (const n of nodes) for (let i = 0; i < ctx.settings.burstPods; i += 1) n.addPod(true);
      });
      stopChurn();
    }
    const dashboard = await measureDashboard(ctx.redis, size, round);
    ctx.dashboards.push(dashboard);
    console.log(dashboardLine(dashboard));
    if (counters.failedEnqueues > 0) throw new Error(`${counters.failedEnqueues} enqueues failed at ${size} nodes (${ctx.redis.topology})`);
  } finally {
    await inPool(nodes, 50, (n) => n.close());
    await probe?.close();
  }
}

function positive(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} wants a positive number, got ${text}`);
  return n;
}

function wholeNumber(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} wants a whole number, got ${text}`);
  return n;
}

function phasesOf(text: string): Phase[] {
  const phases = text.split(',').map((p) => p.trim());
  const unknown = phases.filter((p) => !PHASES.some((known) => known === p));
  if (unknown.length > 0 || phases.length === 0) throw new Error(`--phases wants some of ${PHASES.join(',')}, got ${text}`);
  return PHASES.filter((p) => phases.includes(p));
}

function topologiesOf(text: string): Topology[] {
  const asked = text.split(',').map((t) => t.trim());
  const unknown = asked.filter((t) => !TOPOLOGIES.some((known) => known === t));
  if (unknown.length > 0 || asked.length === 0) throw new Error(`--topologies wants some of ${TOPOLOGIES.join(',')}, got ${text}`);
  return TOPOLOGIES.filter((t) => asked.includes(t));
}

function parseSettings(): Settings {
  const { values } = parseArgs({
    options: {
      topologies: { type: 'string', default: TOPOLOGIES.join(',') },
      sizes: { type: 'string', default: '100,1000,5000' },
      rounds: { type: 'string', default: '3' },
      'window-s': { type: 'string', default: '20' },
      'burst-window-s': { type: 'string' },
      pods: { type: 'string', default: '30' },
      'churn-rate': { type: 'string', default: '50' },
      burst: { type: 'string', default: '30' },
      phases: { type: 'string', default: PHASES.join(',') },
      'probe-nodes': { type: 'string', default: '10' },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'redis.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  return {
    topologies: topologiesOf(values.topologies),
    sizes: values.sizes.split(',').map((s) => positive(s, '--sizes')),
    rounds: positive(values.rounds, '--rounds'),
    windowSeconds: positive(values['window-s'], '--window-s'),
    burstWindowSeconds: positive(values['burst-window-s'] ?? values['window-s'], '--burst-window-s'),
    podsPerNode: positive(values.pods, '--pods'),
    churnRate: positive(values['churn-rate'], '--churn-rate'),
    burstPods: positive(values.burst, '--burst'),
    phases: phasesOf(values.phases),
    probeNodes: wholeNumber(values['probe-nodes'], '--probe-nodes'),
    doc: values['no-doc'] ? undefined : values.doc,
  };
}

async function main(): Promise<void> {
  const settings = parseSettings();
  const started: BenchRedis[] = [];
  const samples: WindowSample[] = [];
  const dashboards: DashboardSample[] = [];
  try {
    for (const topology of settings.topologies) started.push(await startBenchRedis(topology));
    for (let round = 1; round <= settings.rounds; round += 1) {
      // Interleaved, and the order reversed every other round, so drift favours no size or topology.
      const runs = settings.sizes.flatMap((size) => started.map((redis) => ({ size, redis })));
      for (const { size, redis } of round % 2 === 1 ? runs : runs.reverse()) await runSize({ redis, settings, samples, dashboards }, round, size);
    }
    const version = /redis_version:(\S+)/.exec(await started[0]!.shards[0]!.admin.info('server'))?.[1] ?? 'unknown';
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const report = {
      date: new Date().toISOString(), machine: `${cpus().length} × ${cpu}, Node.js ${process.version}`, redisVersion: `Redis ${version}`,
      podsPerNode: settings.podsPerNode, churnRate: settings.churnRate, burstPods: settings.burstPods, target: 5000, loadAverage: loadavg(), samples, dashboards,
    };
    const block = renderRedisResults(report);
    console.log(block);
    for (const topology of settings.topologies) {
      console.log(`${topology}: idle cmd/s/node over all windows: ${spreadText(samples.filter((s) => s.phase === 'idle' && s.topology === topology).map((s) => nodeFigures(s).commandsPerSecondPerNode), 2)}`);
    }
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: REDIS_BEGIN_MARKER, end: REDIS_END_MARKER });
      console.log(`results written to ${settings.doc}`);
    }
  } finally {
    for (const redis of started) await redis.stop();
  }
}

await main();
