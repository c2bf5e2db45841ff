/**
 * The side-by-side pod-startup results as markdown (the block between the pod-startup markers of
 * `docs/benchmarks.md`): the headline ratios nodelet ÷ kubelet and nodelet ÷ raw CRI (the median of
 * the per-round ratios, with their range), then min / median / max of every measure per path, then
 * how the run was made. Pure: the numbers in, markdown out.
 */
import { MEASURES, TARGETS, median, roundRatios, rowKeys, spread, valuesOf, type RowKey, type Sample, type Target } from './compare.js';
import type { MachineInfo } from './machine.js';
import { BEGIN_MARKER, END_MARKER } from './report.js';

/** How the run was made, for the reader who wants to repeat it. */
export interface ComparisonSettings {
  /** The options the run was given, as typed (e.g. `--sizes 30,110 --rounds 3 --steady-s 60`). */
  readonly options: string;
  readonly rounds: number;
  readonly agentConcurrency: number;
  readonly rawConcurrency: number;
  readonly idleSeconds: number;
  readonly idlePods: number;
  readonly steadySeconds: number;
  readonly steadyLifeSeconds: number;
  readonly freshPods: number;
}

export interface ComparisonReport {
  readonly machine: MachineInfo;
  /** The kubelet node's own report (its Node's nodeInfo); undefined when the run had no kubelet. */
  readonly kubelet: { readonly version: string; readonly runtime: string } | undefined;
  readonly settings: ComparisonSettings;
  readonly samples: readonly Sample[];
  /** What the run noticed that a reader should know (other pods on a node, a path left out). */
  readonly notes: readonly string[];
}

const DECIMALS: Record<string, number> = { s: 2, 'pods/s': 2, ms: 0, MiB: 0, millicores: 0, pods: 0 };

function formatValue(value: number, unit: string): string {
  return Number.isFinite(value) ? value.toFixed(DECIMALS[unit] ?? 2) : 'n/a';
}

function label(key: RowKey): string {
  return MEASURES[key.measure].label;
}

function sizeCell(key: RowKey): string {
  return key.size === undefined ? '' : String(key.size);
}

/** `**0.93×** (0.85–1.02)`: the median of the per-round ratios, bold, and their range. */
export function ratioCell(ratios: readonly number[]): string {
  if (ratios.length === 0) return 'n/a';
  const f = (v: number): string => v.toFixed(2);
  const range = ratios.length > 1 ? ` (${f(Math.min(...ratios))}–${f(Math.max(...ratios))})` : '';
  return `**${f(median(ratios))}×**${range}`;
}

function spreadCell(values: readonly number[], unit: string): string {
  const s = spread(values);
  if (s === undefined) return '–';
  return `${formatValue(s.min, unit)} / **${formatValue(s.median, unit)}** / ${formatValue(s.max, unit)}`;
}

function headline(samples: readonly Sample[]): string[] {
  const keys = rowKeys(samples).filter((key) => valuesOf(samples, key, 'nodelet').length > 0);
  return [
    '| measure | N | better when | nodelet ÷ kubelet | nodelet ÷ raw CRI |',
    '| --- | --: | --- | --- | --- |',
    ...keys.map((key) => {
      const vsKubelet = ratioCell(roundRatios(samples, key, 'nodelet', 'kubelet'));
      const vsRaw = ratioCell(roundRatios(samples, key, 'nodelet', 'raw CRI'));
      return `| ${label(key)} | ${sizeCell(key)} | ${MEASURES[key.measure].better} | ${vsKubelet} | ${vsRaw} |`;
    }),
  ];
}

function details(samples: readonly Sample[]): string[] {
  return [
    `| measure | N | unit | ${TARGETS.join(' | ')} |`,
    `| --- | --: | --- | ${TARGETS.map(() => '--:').join(' | ')} |`,
    ...rowKeys(samples).map((key) => {
      const unit = MEASURES[key.measure].unit;
      const cells = TARGETS.map((t: Target) => spreadCell(valuesOf(samples, key, t), unit));
      return `| ${label(key)} | ${sizeCell(key)} | ${unit} | ${cells.join(' | ')} |`;
    }),
  ];
}

function header(report: ComparisonReport): string[] {
  const { machine: m, settings: s } = report;
  const kubelet = report.kubelet === undefined ? 'no kubelet node in this run' : `kubelet ${report.kubelet.version} on ${report.kubelet.runtime}`;
  return [
    `Run ${m.date} on ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.os}, kernel ${m.kernel}.`,
    `Versions: nodelet ${m.nodelet}, Node.js ${m.node}, ${m.containerd}, Kubernetes ${m.kubernetes}; ${kubelet}.`,
    `Command: \`npm run bench -- ${s.options}\`: ${s.rounds} rounds, paths alternating (rotated each round); ` +
      `nodelet's worker concurrency ${s.agentConcurrency}, raw CRI ${s.rawConcurrency} at a time; idle window ${s.idleSeconds} s with ${s.idlePods} pods Running; ` +
      `status freshness over ${s.freshPods} pods per path and round; steady 1 pod/s for ${s.steadySeconds} s, each pod deleted ${s.steadyLifeSeconds} s after its create.`,
  ];
}

/** The results block, markers included. */
export function renderComparison(report: ComparisonReport): string {
  return [
    BEGIN_MARKER,
    '## Pod startup: results',
    '',
    ...header(report),
    '',
    '### Headline: nodelet ÷ the kubelet and ÷ raw CRI',
    '',
    'Median of the per-round ratios (range over the rounds in brackets). Above 1 is more of the measure: worse where lower is better.',
    '',
    ...headline(report.samples),
    '',
    '### Every measure: min / **median** / max over the rounds',
    '',
    ...details(report.samples),
    ...(report.notes.length === 0 ? [] : ['', '### Notes from the run', '', ...report.notes.map((n) => `- ${n}`)]),
    END_MARKER,
  ].join('\n');
}
