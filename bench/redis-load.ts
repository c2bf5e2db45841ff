/**
 * The Redis load benchmark (`npm run bench:redis`; not a test: it asserts nothing about speed).
 * What one shared Redis costs per node: N simulated nodes (`redis-sim-node.ts`: nodelet's real
 * reconcile queue with the agent's options and its two connections, the NodeAgent health sample
 * every 2 s, the periodic resync of every pod every 60 s, phases spread evenly over the nodes, a
 * 10 ms reconcile), against ONE private redis-server this script starts on a free loopback port
 * (never the test cluster's Redis). Where one agent's commands come from: `redis-idle.ts`.
 *
 * Per size and round (sizes interleaved, a fresh FLUSHALL each time): start the nodes, each
 * enqueues its pods once, settle, then one window per phase (`--phases`, all three by default),
 * each `INFO` before and after:
 *   idle   no pod changes;
 *   churn  a fraction of the nodes each create one pod and delete one every second (an add makes
 *          three enqueues — API event, PLEG, status — a delete two);
 *   burst  every node gets `--burst` new pods at once (a rollout), window starts with it.
 *
 *   node --import tsx bench/redis-load.ts [--sizes 10,50,200] [--rounds 3] [--window-s 20]
 *     [--pods 30] [--churn 0.2] [--burst 30] [--phases idle,churn,burst] [--doc PATH | --no-doc]
 * An idle window should last a resync period (`--window-s 60`) to hold each node's resync once.
 */
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { writeResultsBlock } from './report.js';
import { Counters, SimNode } from './redis-sim-node.js';
import { freePort, startRedis } from './redis-server.js';
import { inPool } from './stats.js';
import {
  PHASES,
  REDIS_BEGIN_MARKER,
  REDIS_END_MARKER,
  nodeFigures,
  parseInfo,
  renderRedisResults,
  topCommands,
  type Phase,
  type RedisInfo,
  type WindowSample,
} from './redis-load-report.js';
import { spreadText } from './compare.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
const SETTLE_MS = 5_000;

interface Settings {
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly windowSeconds: number;
  readonly podsPerNode: number;
  readonly churnFraction: number;
  readonly burstPods: number;
  readonly phases: readonly Phase[];
  readonly doc: string | undefined;
}

async function info(admin: Redis): Promise<RedisInfo> {
  return parseInfo(await admin.info('everything'));
}

function cpuSecondsNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

interface RunContext {
  readonly admin: Redis;
  readonly redisUrl: string;
  readonly settings: Settings;
  readonly samples: WindowSample[];
}

async function measure(
  ctx: RunContext,
  fixed: { round: number; nodes: SimNode[]; phase: Phase; baselineClients: number; baselineMemoryBytes: number; counters: Counters },
  during: () => void,
): Promise<void> {
  const { counters } = fixed;
  const before = await info(ctx.admin);
  const [enq0, runs0, cpu0, t0] = [counters.enqueues, counters.runs, cpuSecondsNow(), Date.now()];
  during();
  await sleep(ctx.settings.windowSeconds * 1000);
  const after = await info(ctx.admin);
  const seconds = (Date.now() - t0) / 1000;
  const generatorCpuSeconds = cpuSecondsNow() - cpu0;
  const kept: number[] = [];
  await inPool(fixed.nodes, 20, async (n) => { kept.push(await n.jobsKept()); });
  const jobsInRedis = kept.reduce((a, b) => a + b, 0);
  const sample: WindowSample = {
    round: fixed.round, nodes: fixed.nodes.length, phase: fixed.phase, seconds, before, after,
    baselineClients: fixed.baselineClients, baselineMemoryBytes: fixed.baselineMemoryBytes,
    enqueues: counters.enqueues - enq0, runs: counters.runs - runs0, jobsInRedis, generatorCpuSeconds,
  };
  ctx.samples.push(sample);
  const f = nodeFigures(sample);
  console.log(
    `round ${fixed.round} nodes ${fixed.nodes.length} ${fixed.phase}: ${f.connectionsPerNode.toFixed(2)} conn/node, ${(f.memoryBytesPerNode / 1024).toFixed(1)} KiB/node, ` +
      `${f.commandsPerSecondPerNode.toFixed(2)} cmd/s/node, Redis CPU ${f.redisCpuPercent.toFixed(1)} %, generator CPU ${f.generatorCpuPercent.toFixed(0)} %, ` +
      `ran ${sample.runs} of ${sample.enqueues} enqueues, ${jobsInRedis} jobs kept, ${counters.failedEnqueues} failed enqueues so far; ${topCommands(sample, 4)}`,
  );
}

async function runSize(ctx: RunContext, round: number, size: number): Promise<void> {
  await ctx.admin.flushall();
  const empty = await info(ctx.admin);
  const counters = new Counters();
  const nodes = Array.from({ length: size }, (_, i) => new SimNode(`sim-${i}`, ctx.redisUrl, counters));
  try {
    // Resync phases spread evenly: agents' resyncs are uncorrelated, and even spreading gives
    // every window its expected share of them instead of a random one.
    await inPool(nodes, 20, (n) => n.start(ctx.settings.podsPerNode, (nodes.indexOf(n) + 0.5) / size));
    await sleep(SETTLE_MS);
    const fixed = { round, nodes, baselineClients: empty.connectedClients, baselineMemoryBytes: empty.usedMemoryBytes, counters };
    const churning = nodes.slice(0, Math.ceil(size * ctx.settings.churnFraction));
    let churn: NodeJS.Timeout | undefined;
    for (const phase of ctx.settings.phases) {
      await measure(ctx, { ...fixed, phase }, () => {
        if (phase === 'churn') {
          churn = setInterval(() => { for (const n of churning) { n.addPod(); n.deletePod(); } }, 1_000);
        } else if (phase === 'burst') {
          for (const n of nodes) for (let i = 0; i < ctx.settings.burstPods; i += 1) n.addPod();
        }
      });
      clearInterval(churn);
    }
    if (counters.failedEnqueues > 0) throw new Error(`${counters.failedEnqueues} enqueues failed at ${size} nodes`);
  } finally {
    await inPool(nodes, 50, (n) => n.close());
  }
}

function positive(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} wants a positive number, got ${text}`);
  return n;
}

function phasesOf(text: string): Phase[] {
  const phases = text.split(',').map((p) => p.trim());
  const unknown = phases.filter((p) => !PHASES.some((known) => known === p));
  if (unknown.length > 0 || phases.length === 0) throw new Error(`--phases wants some of ${PHASES.join(',')}, got ${text}`);
  return PHASES.filter((p) => phases.includes(p));
}

function parseSettings(): Settings {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '10,50,200' },
      rounds: { type: 'string', default: '3' },
      'window-s': { type: 'string', default: '20' },
      pods: { type: 'string', default: '30' },
      churn: { type: 'string', default: '0.2' },
      burst: { type: 'string', default: '30' },
      phases: { type: 'string', default: PHASES.join(',') },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'redis.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  return {
    sizes: values.sizes.split(',').map((s) => positive(s, '--sizes')),
    rounds: positive(values.rounds, '--rounds'),
    windowSeconds: positive(values['window-s'], '--window-s'),
    podsPerNode: positive(values.pods, '--pods'),
    churnFraction: positive(values.churn, '--churn'),
    burstPods: positive(values.burst, '--burst'),
    phases: phasesOf(values.phases),
    doc: values['no-doc'] ? undefined : values.doc,
  };
}

async function main(): Promise<void> {
  const settings = parseSettings();
  const port = await freePort();
  const redis = await startRedis(port);
  const redisUrl = `redis://127.0.0.1:${port}`;
  const admin = new Redis(redisUrl, { connectionName: 'bench-info' });
  const samples: WindowSample[] = [];
  try {
    const ctx: RunContext = { admin, redisUrl, settings, samples };
    for (let round = 1; round <= settings.rounds; round += 1) {
      // Interleaved, and the order reversed every other round, so drift does not favour a size.
      const order = round % 2 === 1 ? settings.sizes : [...settings.sizes].reverse();
      for (const size of order) await runSize(ctx, round, size);
    }
    const version = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? 'unknown';
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const report = {
      date: new Date().toISOString(), machine: `${cpus().length} × ${cpu}, Node.js ${process.version}`, redisVersion: `Redis ${version}`,
      podsPerNode: settings.podsPerNode, churnFraction: settings.churnFraction, burstPods: settings.burstPods, target: 1000, loadAverage: loadavg(), samples,
    };
    const block = renderRedisResults(report);
    console.log(block);
    console.log(`idle cmd/s/node over all windows: ${spreadText(samples.filter((s) => s.phase === 'idle').map((s) => nodeFigures(s).commandsPerSecondPerNode), 2)}`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: REDIS_BEGIN_MARKER, end: REDIS_END_MARKER });
      console.log(`results written to ${settings.doc}`);
    }
  } finally {
    admin.disconnect();
    redis.kill('SIGTERM');
  }
}

await main();
