/**
 * The pure half of the Redis load benchmark (`bench/redis-load.ts`): parsing `INFO`, turning two
 * `INFO` snapshots around a window into per-node figures, the flatness check that decides whether
 * a linear extrapolation to 1,000 nodes is allowed, and the Markdown results block.
 */
import { percentile, type LatencySummary } from './stats.js';
import { spreadText } from './compare.js';
import type { Cost, DashboardSample } from './redis-dashboard.js';

export const REDIS_BEGIN_MARKER = '<!-- BEGIN redis-load results: written by bench/redis-load.ts, do not edit by hand -->';
export const REDIS_END_MARKER = '<!-- END redis-load results -->';

/** The `INFO` fields the benchmark reads. */
export interface RedisInfo {
  readonly connectedClients: number;
  readonly usedMemoryBytes: number;
  readonly totalCommands: number;
  /** used_cpu_sys + used_cpu_user, seconds. */
  readonly cpuSeconds: number;
  /** Per command (lower case, e.g. `evalsha`): calls so far. */
  readonly commandCalls: ReadonlyMap<string, number>;
}

function numberField(fields: ReadonlyMap<string, string>, name: string): number {
  const value = Number(fields.get(name));
  if (!Number.isFinite(value)) throw new Error(`INFO has no numeric ${name}`);
  return value;
}

/** Parses the text of `INFO` (all sections); throws when a field the benchmark needs is missing. */
export function parseInfo(text: string): RedisInfo {
  const fields = new Map<string, string>();
  const commandCalls = new Map<string, number>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (line.startsWith('#') || colon < 0) continue;
    const key = line.slice(0, colon);
    const value = line.slice(colon + 1);
    const command = /^cmdstat_(.+)$/.exec(key);
    if (command !== null) {
      const calls = /(?:^|,)calls=(\d+)/.exec(value);
      if (calls !== null) commandCalls.set(command[1]!, Number(calls[1]));
      continue;
    }
    fields.set(key, value);
  }
  return {
    connectedClients: numberField(fields, 'connected_clients'),
    usedMemoryBytes: numberField(fields, 'used_memory'),
    totalCommands: numberField(fields, 'total_commands_processed'),
    cpuSeconds: numberField(fields, 'used_cpu_sys') + numberField(fields, 'used_cpu_user'),
    commandCalls,
  };
}

/** The workload phases measured at every size. */
export type Phase = 'idle' | 'churn' | 'burst';
export const PHASES: readonly Phase[] = ['idle', 'churn', 'burst'];

/** The sum of several servers' INFO (the shards of a cluster): counters and gauges add up. */
export function sumInfo(infos: readonly RedisInfo[]): RedisInfo {
  const commandCalls = new Map<string, number>();
  for (const info of infos) for (const [name, calls] of info.commandCalls) commandCalls.set(name, (commandCalls.get(name) ?? 0) + calls);
  const sum = (field: 'connectedClients' | 'usedMemoryBytes' | 'totalCommands' | 'cpuSeconds'): number => infos.reduce((total, info) => total + info[field], 0);
  return { connectedClients: sum('connectedClients'), usedMemoryBytes: sum('usedMemoryBytes'), totalCommands: sum('totalCommands'), cpuSeconds: sum('cpuSeconds'), commandCalls };
}

/** One measured window: a phase at one size in one round. */
export interface WindowSample {
  /** `single` (one Redis) or `cluster` (3 shards); absent in runs before topologies. */
  readonly topology?: string;
  /** Per shard, the redis-server's CPU over the window from /proc/<pid>/stat, % of one core. */
  readonly shardCpuPercent?: readonly number[];
  /** Enqueue → run latency of the pod events enqueued and run in the window. */
  readonly latency?: LatencySummary;
  /** The generator's event-loop delay over the window, p99, ms (what its one thread added to every latency). */
  readonly loopDelayP99Ms?: number;
  /** Burst windows: ms from the burst to the last burst pod's first reconcile, when all had one. */
  readonly burstDrainMs?: number;
  /** Burst windows: burst pods without a reconcile at the window's end (0 when drained). */
  readonly burstOutstanding?: number;
  /** The latency probe's agents (a process of their own, as an agent has): their latency, loop delay and burst drain. */
  readonly probe?: ProbeSample;
  readonly round: number;
  readonly nodes: number;
  readonly phase: Phase;
  readonly seconds: number;
  readonly before: RedisInfo;
  readonly after: RedisInfo;
  /** Redis connections open before any simulated node started (the benchmark's own INFO client). */
  readonly baselineClients: number;
  /** used_memory of the empty Redis, before any node started. */
  readonly baselineMemoryBytes: number;
  /** Enqueues the simulated agents made in the window, and reconciles their workers ran. */
  readonly enqueues: number;
  readonly runs: number;
  /** Jobs kept in Redis (waiting + active + delayed + completed + failed, all nodes) at the window's end. */
  readonly jobsInRedis: number;
  /** CPU seconds the load generator itself used in the window (user + system). */
  readonly generatorCpuSeconds: number;
}

/** What the latency probe (`redis-probe.ts`) measured in a window. */
export interface ProbeSample {
  readonly agents: number;
  readonly latency: LatencySummary;
  readonly loopDelayP99Ms: number;
  readonly burstDrainMs?: number;
  readonly burstOutstanding?: number;
}

/** Per-node figures of one window. */
export interface NodeFigures {
  readonly connectionsPerNode: number;
  readonly memoryBytesPerNode: number;
  /** (used_memory − empty Redis) ÷ jobs kept; undefined with no jobs. */
  readonly memoryBytesPerJob: number | undefined;
  readonly commandsPerSecondPerNode: number;
  /** Redis CPU, % of one core, per node. */
  readonly redisCpuPercentPerNode: number;
  /** Redis CPU, % of one core, all nodes. */
  readonly redisCpuPercent: number;
  readonly generatorCpuPercent: number;
}

/** The per-node figures of a window (the benchmark's own INFO connection excluded). */
export function nodeFigures(s: WindowSample): NodeFigures {
  const memory = s.after.usedMemoryBytes - s.baselineMemoryBytes;
  const cpuPercent = ((s.after.cpuSeconds - s.before.cpuSeconds) / s.seconds) * 100;
  return {
    connectionsPerNode: (s.after.connectedClients - s.baselineClients) / s.nodes,
    memoryBytesPerNode: memory / s.nodes,
    memoryBytesPerJob: s.jobsInRedis > 0 ? memory / s.jobsInRedis : undefined,
    commandsPerSecondPerNode: (s.after.totalCommands - s.before.totalCommands) / s.seconds / s.nodes,
    redisCpuPercentPerNode: cpuPercent / s.nodes,
    redisCpuPercent: cpuPercent,
    generatorCpuPercent: (s.generatorCpuSeconds / s.seconds) * 100,
  };
}

/** The commands of a window by calls, most first, as `name ratio%`. */
export function topCommands(s: WindowSample, limit: number): string {
  const deltas = [...s.after.commandCalls].map(([name, calls]) => [name, calls - (s.before.commandCalls.get(name) ?? 0)] as const);
  const total = deltas.reduce((sum, [, d]) => sum + d, 0);
  if (total <= 0) return 'none';
  return deltas
    .filter(([, d]) => d > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, d]) => `${name} ${((d / total) * 100).toFixed(0)} %`)
    .join(', ');
}

type FigureName = 'connectionsPerNode' | 'memoryBytesPerNode' | 'commandsPerSecondPerNode' | 'redisCpuPercentPerNode';

/** Whether one per-node figure of one phase stays flat across sizes. */
export interface Flatness {
  readonly phase: Phase;
  readonly figure: FigureName;
  /** Median per size, ascending sizes. */
  readonly medians: readonly { readonly nodes: number; readonly median: number }[];
  /** (largest median − smallest) ÷ smallest; 0 when flat. */
  readonly relativeRange: number;
  readonly flat: boolean;
}

/** The largest relative range of per-size medians that still counts as flat. */
export const FLAT_TOLERANCE = 0.25;

/** The medians of `figure` per size for `phase`, and whether they lie within {@link FLAT_TOLERANCE}. */
export function flatness(samples: readonly WindowSample[], phase: Phase, figure: FigureName): Flatness {
  const sizes = [...new Set(samples.filter((s) => s.phase === phase).map((s) => s.nodes))].sort((a, b) => a - b);
  const medians = sizes.map((nodes) => ({
    nodes,
    median: percentile(samples.filter((s) => s.phase === phase && s.nodes === nodes).map((s) => nodeFigures(s)[figure]), 50),
  }));
  const values = medians.map((m) => m.median);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const relativeRange = low > 0 ? (high - low) / low : high > 0 ? Number.POSITIVE_INFINITY : 0;
  return { phase, figure, medians, relativeRange, flat: medians.length >= 2 && relativeRange <= FLAT_TOLERANCE };
}

/** The median per-node value of the largest size times `nodes`; undefined unless the figure is flat. */
export function extrapolate(samples: readonly WindowSample[], phase: Phase, figure: FigureName, nodes: number): number | undefined {
  const f = flatness(samples, phase, figure);
  const largest = f.medians.at(-1);
  return f.flat && largest !== undefined ? largest.median * nodes : undefined;
}

/** How the benchmark ran, for the report. */
export interface RedisLoadReport {
  readonly date: string;
  readonly machine: string;
  readonly redisVersion: string;
  readonly podsPerNode: number;
  /** Pods created, and as many deleted, per second across the fleet in churn windows. */
  readonly churnRate: number;
  readonly burstPods: number;
  readonly target: number;
  /** The machine's 1/5/15-minute load averages when the run ended (other work competes with Redis and the generator). */
  readonly loadAverage: readonly number[];
  readonly samples: readonly WindowSample[];
  /** The dashboard measured after each size's windows; absent in runs before it was. */
  readonly dashboards?: readonly DashboardSample[];
}

const FIGURES: readonly { readonly name: FigureName; readonly label: string; readonly digits: number; readonly scale: number }[] = [
  { name: 'connectionsPerNode', label: 'connections / node', digits: 2, scale: 1 },
  { name: 'memoryBytesPerNode', label: 'used_memory KiB / node', digits: 1, scale: 1 / 1024 },
  { name: 'commandsPerSecondPerNode', label: 'commands/s / node', digits: 2, scale: 1 },
  { name: 'redisCpuPercentPerNode', label: 'Redis CPU % of a core / node', digits: 3, scale: 1 },
];

const topologyOf = (s: WindowSample): string => s.topology ?? 'single';

/** Shard CPU over a window's rounds: min / median / max per shard, shards separated by `;`. */
function shardCpuText(mine: readonly WindowSample[]): string {
  const shards = Math.max(0, ...mine.map((s) => s.shardCpuPercent?.length ?? 0));
  return Array.from({ length: shards }, (_, i) => spreadText(mine.flatMap((s) => (s.shardCpuPercent?.[i] === undefined ? [] : [s.shardCpuPercent[i]])), 1)).join('; ');
}

/** Enqueue → run latency over a window's rounds: p50, p99, max per round. */
function latencyText(mine: readonly WindowSample[]): string {
  return mine.map((s) => (s.latency === undefined || s.latency.count === 0 ? '–' : `${s.latency.p50Ms.toFixed(0)}/${s.latency.p99Ms.toFixed(0)}/${s.latency.maxMs.toFixed(0)}`)).join(', ');
}

/** Burst drain per round: ms to the last burst pod's first reconcile, or the pods left; "–" outside bursts. */
function drainText(mine: readonly WindowSample[]): string {
  return mine.map((s) => (s.burstOutstanding === undefined ? '–' : s.burstDrainMs === undefined ? `${s.burstOutstanding} left` : s.burstDrainMs.toFixed(0))).join(', ');
}

/** The probe's enqueue → run per round, `p50/p99/max` ms, with its event-loop delay p99 in parentheses. */
function probeLatencyText(mine: readonly WindowSample[]): string {
  return mine.map((s) => (s.probe === undefined || s.probe.latency.count === 0 ? '–' : `${s.probe.latency.p50Ms.toFixed(0)}/${s.probe.latency.p99Ms.toFixed(0)}/${s.probe.latency.maxMs.toFixed(0)} (${s.probe.loopDelayP99Ms.toFixed(0)})`)).join(', ');
}

function sizeRows(samples: readonly WindowSample[]): string[] {
  const keyOf = (s: WindowSample): string => `${topologyOf(s)}|${s.phase}|${s.nodes}`;
  const keys = [...new Set(samples.map(keyOf))];
  return keys.map((key) => {
    const mine = samples.filter((s) => keyOf(s) === key);
    const first = mine[0]!;
    const figures = mine.map(nodeFigures);
    const perJob = figures.flatMap((f) => (f.memoryBytesPerJob === undefined ? [] : [f.memoryBytesPerJob / 1024]));
    const cells = FIGURES.map((fig) => spreadText(figures.map((f) => f[fig.name] * fig.scale), fig.digits));
    const ran = mine.map((s) => `${s.runs}/${s.enqueues}`).join(', ');
    return `| ${topologyOf(first)} | ${first.phase} | ${first.nodes} | ${mine.length} | ${cells.join(' | ')} | ${spreadText(perJob, 2)} | ${spreadText(figures.map((f) => f.redisCpuPercent))} | ${shardCpuText(mine)} | ${latencyText(mine)} | ${probeLatencyText(mine)} | ${drainText(mine)} | ${spreadText(figures.map((f) => f.generatorCpuPercent))} | ${spreadText(mine.flatMap((s) => (s.loopDelayP99Ms === undefined ? [] : [s.loopDelayP99Ms])), 1)} | ${ran} |`;
  });
}

/** The dashboard's rows: per topology and size, min / median / max over the rounds. */
function dashboardRows(dashboards: readonly DashboardSample[]): string[] {
  const keyOf = (d: DashboardSample): string => `${d.topology}|${d.nodes}`;
  return [...new Set(dashboards.map(keyOf))].map((key) => {
    const mine = dashboards.filter((d) => keyOf(d) === key);
    const first = mine[0]!;
    const cost = (pick: (d: DashboardSample) => Cost): string => `${spreadText(mine.map((d) => pick(d).ms), 0)} | ${spreadText(mine.map((d) => pick(d).redisCpuMs), 0)}`;
    return `| ${first.topology} | ${first.nodes} | ${mine.map((d) => `${d.queuesFound}/${d.workersSeen}`).join(', ')} | ${cost((d) => d.discover)} | ${cost((d) => d.overview)} | ${cost((d) => d.perQueueWorkers)} |`;
  });
}

function dashboardBlock(dashboards: readonly DashboardSample[] | undefined): string[] {
  if (dashboards === undefined || dashboards.length === 0) return [];
  return [
    '',
    'The dashboard, after each size\'s windows with every node connected: finding the queues (a SCAN of every primary), the overview (every queue\'s counts and workers, one client listing per server), and the workers of the first 100 queues asked per queue through BullMQ as the pages did before (a listing of every client per queue; the whole page asked every queue). "queues/workers" per round: queues found, workers seen connected.',
    '',
    '| topology | nodes | queues/workers | find queues ms | Redis CPU ms | overview ms | Redis CPU ms | workers of 100 queues asked per queue (before) ms | Redis CPU ms |',
    '| --- | --: | --- | --- | --- | --- | --- | --- | --- |',
    ...dashboardRows(dashboards),
  ];
}

function flatnessRows(report: RedisLoadReport): string[] {
  const topologies = [...new Set(report.samples.map(topologyOf))];
  return topologies.flatMap((topology) => {
    const samples = report.samples.filter((s) => topologyOf(s) === topology);
    const measured = PHASES.filter((phase) => samples.some((s) => s.phase === phase));
    return measured.flatMap((phase) =>
      FIGURES.map((fig) => {
        const f = flatness(samples, phase, fig.name);
        const medians = f.medians.map((m) => `${m.nodes}: ${(m.median * fig.scale).toFixed(fig.digits)}`).join(', ');
        const at = extrapolate(samples, phase, fig.name, report.target);
        const projected = at === undefined ? 'not extrapolated (not flat)' : (at * fig.scale).toFixed(fig.digits === 3 ? 1 : 0);
        return `| ${topology} | ${phase} | ${fig.label} | ${medians} | ${(f.relativeRange * 100).toFixed(0)} % | ${f.flat ? 'yes' : 'no'} | ${projected} |`;
      }),
    );
  });
}

/** The results block, markers included. */
export function renderRedisResults(report: RedisLoadReport): string {
  const rounds = new Set(report.samples.map((s) => s.round)).size;
  const sizes = [...new Set(report.samples.map((s) => s.nodes))].sort((a, b) => a - b);
  const largestBurst = report.samples.filter((s) => s.phase === 'burst' && s.nodes === sizes.at(-1)).at(-1);
  return [
    REDIS_BEGIN_MARKER,
    '## Redis load: results',
    '',
    `Run ${report.date} on ${report.machine}; ${report.redisVersion}, private redis-servers on loopback (single: one; cluster: 3 primaries, no replicas); load average at the end ${report.loadAverage.map((l) => l.toFixed(2)).join(' / ')} (1 / 5 / 15 min).`,
    `Sizes ${sizes.join(', ')} simulated nodes, ${rounds} rounds, sizes interleaved; ${report.podsPerNode} pods per node; churn: ${report.churnRate} pods created and ${report.churnRate} deleted per second across the fleet; burst: every node gets ${report.burstPods} new pods at once.`,
    'Every simulated node runs nodelet\'s real queue code (no replayed command mix): the first table is measured only; the second projects a figure only where it is flat across sizes. Figures are min / median / max over the rounds; per node = (INFO delta over the window, summed over the shards) ÷ nodes, the benchmark\'s own INFO connections and the empty Redis\'s memory excluded. "shard CPU" is each redis-server\'s utime + stime from /proc/<pid>/stat over the window, % of one core, shards separated by ";". "enqueue → run" is the time from a pod event\'s enqueue to the start of the run that covers it, p50/p99/max in ms per round. "burst drained" is the time from the burst to the start of the last burst pod\'s first reconcile, per round ("N left": pods never reconciled in the window). "generator event-loop delay" is the p99 delay of the load generator\'s one thread, which every simulated agent shares (a real agent has its own): enqueue → run latencies near it are the generator\'s. "probe" is a few of the size\'s agents run in a process of their own (`bench/redis-probe.ts`), as every agent is in a fleet, each creating and deleting one pod per second in every window on top of the fleet\'s churn: their enqueue → run is what an agent sees of the loaded Redis. "ran/enqueued" counts the reconciles the simulated workers ran against the enqueues made in the window (coalescing makes runs ≤ enqueues).',
    '',
    `| topology | phase | nodes | windows | ${FIGURES.map((f) => f.label).join(' | ')} | KiB / kept job | Redis CPU % (all) | shard CPU % (/proc) | enqueue → run ms p50/p99/max | probe: enqueue → run ms p50/p99/max (its loop delay p99) | burst drained, ms | generator CPU % | generator event-loop delay p99, ms | ran/enqueued |`,
    '| --- | --- | --: | --: | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...sizeRows(report.samples),
    ...dashboardBlock(report.dashboards),
    '',
    `Flatness across sizes (medians per size; flat when the range is ≤ ${FLAT_TOLERANCE * 100} % of the smallest), and the linear projection to ${report.target} nodes where flat:`,
    '',
    `| topology | phase | figure | median per size | range | flat | at ${report.target} nodes |`,
    '| --- | --- | --- | --- | --: | --- | --: |',
    ...flatnessRows(report),
    '',
    largestBurst === undefined ? '' : `Commands in the last burst window at ${largestBurst.nodes} nodes: ${topCommands(largestBurst, 6)}.`,
    REDIS_END_MARKER,
  ].join('\n');
}
