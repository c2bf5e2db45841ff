/**
 * The pod-startup results as markdown, and their place in `docs/benchmarks.md`: the block between
 * the two markers is replaced on every run; the prose around it is kept (and written with a
 * default intro when the file does not exist yet).
 */
import type { MachineInfo } from './machine.js';
import type { NodeletRunResult } from './nodelet-startup.js';
import type { RawRunResult } from './raw-cri-startup.js';
import type { LatencySummary } from './stats.js';

export const BEGIN_MARKER = '<!-- BEGIN pod-startup results: written by bench/pod-startup.ts, do not edit by hand -->';
export const END_MARKER = '<!-- END pod-startup results -->';

/** Everything measured for one N. */
export interface SizeResult {
  readonly count: number;
  readonly nodelet: NodeletRunResult;
  /** At the agent's worker concurrency. */
  readonly rawBounded: RawRunResult;
  readonly rawUnbounded: RawRunResult;
}

export interface BenchReport {
  readonly machine: MachineInfo;
  readonly agentConcurrency: number;
  /** Pods of other namespaces on the node during the run (0 on a quiet node). */
  readonly otherPods: number;
  readonly sizes: readonly SizeResult[];
}

export const DEFAULT_INTRO = `# Benchmarks

## Pod startup (\`bench/pod-startup.ts\`)

How fast nodelet turns pods created in the API into running containers, and how that compares with
the fastest this machine can start the same containers through the CRI with no agent at all.

- **nodelet**: N busybox pods (\`sleep 3600\`, image present, no service account token) are created
  through the API at once, bound to the node, in a namespace of their own. Latency is create →
  Running as seen by a watch, counted from the moment the batch was issued, so it includes each
  pod's wait behind the others; throughput is N over the time from the first create to the last
  Running. Then all N are deleted at once: delete → gone is the time until every pod object has left
  the API and no sandbox of theirs is left in containerd. The agent's CPU seconds (utime + stime
  from \`/proc/<pid>/stat\`) and its peak RSS (VmRSS sampled every 100 ms; VmHWM would count since
  the agent started) are taken over the batch.
- **raw CRI**: the same N pods driven straight through the project's CRI client (\`cri/\`):
  RunPodSandbox + CreateContainer + StartContainer per pod, with the configs the agent builds, at
  the agent's worker concurrency and at unbounded concurrency; the same latency definition; then
  StopPodSandbox + RemovePodSandbox (teardown).

The headline is the ratio nodelet ÷ raw CRI at the same concurrency: for p50 latency (above 1 means
nodelet is slower) and for throughput (below 1 means nodelet starts fewer pods per second).

Run it on the test cluster, with nothing else running on it (\`npm run cluster:up\` first):

\`\`\`sh
npm run bench                          # N = 30 and 100; rewrites the results below
npm run bench -- --sizes 10 --no-doc   # a quick look, printed only
\`\`\`

Each run is one sample on a small VM and runs vary: compare the ratios within one run, not
absolute times across runs or machines.
`;

function seconds(ms: number): string {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'n/a';
}

function rate(perSec: number): string {
  return Number.isFinite(perSec) ? `${perSec.toFixed(1)} pods/s` : 'n/a';
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

function ratio(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a';
}

function latencyCells(s: LatencySummary): string {
  return `${seconds(s.p50Ms)} | ${seconds(s.p99Ms)} | ${seconds(s.maxMs)} | ${rate(s.throughputPerSec)}`;
}

function machineLines(report: BenchReport): string[] {
  const m = report.machine;
  return [
    `Run ${m.date} on ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.os}, kernel ${m.kernel}.`,
    `Versions: nodelet ${m.nodelet}, Node.js ${m.node}, ${m.containerd}, Kubernetes ${m.kubernetes}. ` +
      `Agent worker concurrency ${report.agentConcurrency}; other pods on the node during the run: ${report.otherPods}.`,
  ];
}

function headline(report: BenchReport): string[] {
  const c = report.agentConcurrency;
  return [
    `| N | p50 create → Running, nodelet ÷ raw CRI (${c} at a time) | throughput, nodelet ÷ raw CRI (${c} at a time) | p50 ÷ raw CRI unbounded | throughput ÷ raw CRI unbounded |`,
    '| --: | --- | --- | --- | --- |',
    ...report.sizes.map((s) => {
      const n = s.nodelet.create;
      const b = s.rawBounded.create;
      const u = s.rawUnbounded.create;
      return (
        `| ${s.count} | **${ratio(n.p50Ms, b.p50Ms)}** (${seconds(n.p50Ms)} vs ${seconds(b.p50Ms)}) ` +
        `| **${ratio(n.throughputPerSec, b.throughputPerSec)}** (${rate(n.throughputPerSec)} vs ${rate(b.throughputPerSec)}) ` +
        `| ${ratio(n.p50Ms, u.p50Ms)} | ${ratio(n.throughputPerSec, u.throughputPerSec)} |`
      );
    }),
  ];
}

function createTable(report: BenchReport): string[] {
  return [
    '| N | path | concurrency | p50 | p99 | last Running | throughput |',
    '| --: | --- | --- | --: | --: | --: | --: |',
    ...report.sizes.flatMap((s) => [
      `| ${s.count} | nodelet | ${report.agentConcurrency} workers | ${latencyCells(s.nodelet.create)} |`,
      `| ${s.count} | raw CRI | ${s.rawBounded.concurrency ?? 'all'} | ${latencyCells(s.rawBounded.create)} |`,
      `| ${s.count} | raw CRI | all at once | ${latencyCells(s.rawUnbounded.create)} |`,
    ]),
  ];
}

function deleteTable(report: BenchReport): string[] {
  return [
    '| N | nodelet: p50 gone from the API | p99 | all gone (API and runtime) | raw CRI teardown, same concurrency | raw CRI teardown, all at once |',
    '| --: | --: | --: | --: | --: | --: |',
    ...report.sizes.map(
      (s) =>
        `| ${s.count} | ${seconds(s.nodelet.deleteApi.p50Ms)} | ${seconds(s.nodelet.deleteApi.p99Ms)} | ${seconds(s.nodelet.deleteAllGoneMs)} ` +
        `| ${seconds(s.rawBounded.teardownMs)} | ${seconds(s.rawUnbounded.teardownMs)} |`,
    ),
  ];
}

function agentTable(report: BenchReport): string[] {
  return [
    '| N | CPU s, create | CPU s, delete | CPU ms per pod (both) | RSS before | peak RSS |',
    '| --: | --: | --: | --: | --: | --: |',
    ...report.sizes.map((s) => {
      const n = s.nodelet;
      const perPod = ((n.cpuSecondsCreate + n.cpuSecondsDelete) * 1000) / s.count;
      return `| ${s.count} | ${n.cpuSecondsCreate.toFixed(2)} | ${n.cpuSecondsDelete.toFixed(2)} | ${perPod.toFixed(0)} | ${mib(n.rssBeforeBytes)} | ${mib(n.peakRssBytes)} |`;
    }),
  ];
}

/** The results block, markers included. */
export function renderResults(report: BenchReport): string {
  return [
    BEGIN_MARKER,
    '## Pod startup: results',
    '',
    ...machineLines(report),
    '',
    '### Headline',
    '',
    ...headline(report),
    '',
    '### Create → Running',
    '',
    ...createTable(report),
    '',
    '### Delete → gone',
    '',
    ...deleteTable(report),
    '',
    '### The agent (nodelet process)',
    '',
    ...agentTable(report),
    END_MARKER,
  ].join('\n');
}

/** The markers around one benchmark's results block. */
export interface ResultMarkers {
  readonly begin: string;
  readonly end: string;
}

const POD_STARTUP_MARKERS: ResultMarkers = { begin: BEGIN_MARKER, end: END_MARKER };

/** The document with its results block replaced (or appended, or under the default intro when there is no document). */
export function updateDocument(existing: string | undefined, block: string, markers: ResultMarkers = POD_STARTUP_MARKERS): string {
  if (existing === undefined || existing.trim() === '') return `${DEFAULT_INTRO}\n${block}\n`;
  const begin = existing.indexOf(markers.begin);
  const end = existing.indexOf(markers.end);
  if (begin < 0 || end < begin) return `${existing.trimEnd()}\n\n${block}\n`;
  return existing.slice(0, begin) + block + existing.slice(end + markers.end.length);
}
