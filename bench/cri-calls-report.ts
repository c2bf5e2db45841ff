/**
 * What each agent asks of its runtime while a batch of pods starts (`npm run bench:cri-calls`): the
 * CRI calls by operation, per pod, from each agent's own `kubelet_runtime_operations_total` (both
 * nodelet and the kubelet export it under that name, by `operation_type`). Pure: counters in,
 * markdown out. Raw CRI has no counter; by construction it makes one RunPodSandbox, CreateContainer
 * and StartContainer per pod plus its polling (bench/raw-cri-startup.ts).
 */
import type { MachineInfo } from './machine.js';
import { median, spreadText } from './compare.js';
import { seriesByLabel } from './exposition.js';

/** The CRI operation counter both agents export, and its operation label. */
export const CRI_OPERATIONS_METRIC = 'kubelet_runtime_operations_total';
const OPERATION_LABEL = 'operation_type';

/** Running totals of CRI calls by operation type, read from one agent's `/metrics`. */
export type CriCallCounts = ReadonlyMap<string, number>;

export function criCallCounts(exposition: string): CriCallCounts {
  return seriesByLabel(exposition, CRI_OPERATIONS_METRIC, OPERATION_LABEL);
}

/**
 * The calls made between two readings, by operation. An operation first counted after the first
 * reading (an agent that had not yet made that call) counts from 0.
 */
export function callsBetween(before: CriCallCounts, after: CriCallCounts): Map<string, number> {
  const calls = new Map<string, number>();
  for (const [operation, total] of after) {
    const made = total - (before.get(operation) ?? 0);
    if (made > 0) calls.set(operation, made);
  }
  return calls;
}

/** One batch on one agent's node: its CRI calls from the first create to the last pod Running. */
export interface CriCallsSample {
  readonly target: 'nodelet' | 'kubelet';
  readonly round: number;
  readonly pods: number;
  readonly windowSeconds: number;
  readonly calls: ReadonlyMap<string, number>;
}

export interface CriCallsReport {
  readonly machine: MachineInfo;
  readonly command: string;
  readonly samples: readonly CriCallsSample[];
}

export const CRI_CALLS_BEGIN_MARKER = '<!-- BEGIN cri-calls results: written by bench/cri-calls.ts, do not edit by hand -->';
export const CRI_CALLS_END_MARKER = '<!-- END cri-calls results -->';

const ALL = 'all operations';

const totalCalls = (s: CriCallsSample): number => [...s.calls.values()].reduce((sum, n) => sum + n, 0);
const perPod = (s: CriCallsSample, operation: string): number => (operation === ALL ? totalCalls(s) : (s.calls.get(operation) ?? 0)) / s.pods;

/** nodelet's value ÷ the kubelet's, per round that has both; empty when neither round has a kubelet value above 0. */
function perRoundRatios(samples: readonly CriCallsSample[], operation: string): number[] {
  const ratios: number[] = [];
  for (const round of new Set(samples.map((s) => s.round))) {
    const nodelet = samples.find((s) => s.round === round && s.target === 'nodelet');
    const kubelet = samples.find((s) => s.round === round && s.target === 'kubelet');
    if (nodelet === undefined || kubelet === undefined || perPod(kubelet, operation) === 0) continue;
    ratios.push(perPod(nodelet, operation) / perPod(kubelet, operation));
  }
  return ratios;
}

function ratioCell(samples: readonly CriCallsSample[], operation: string): string {
  const ratios = perRoundRatios(samples, operation);
  if (ratios.length === 0) return 'n/a';
  return `**${median(ratios).toFixed(2)}×** (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
}

function cell(samples: readonly CriCallsSample[], target: CriCallsSample['target'], value: (s: CriCallsSample) => number, digits: number): string {
  const mine = samples.filter((s) => s.target === target);
  return mine.length === 0 ? '–' : spreadText(mine.map(value), digits);
}

/** One size's table: a row per operation either agent called, then all of them, then the window. */
function renderSize(samples: readonly CriCallsSample[]): string[] {
  const operations = [...new Set(samples.flatMap((s) => [...s.calls.keys()]))].sort();
  const rows = [...operations, ALL].map((operation) => {
    const name = operation === ALL ? `**${ALL}**` : operation;
    return `| ${name} | ${cell(samples, 'nodelet', (s) => perPod(s, operation), 2)} | ${cell(samples, 'kubelet', (s) => perPod(s, operation), 2)} | ${ratioCell(samples, operation)} |`;
  });
  return [
    `### ${samples[0]?.pods ?? 0} pods`,
    '',
    '| CRI calls per pod, by operation | nodelet | kubelet | nodelet ÷ kubelet |',
    '| --- | --: | --: | --- |',
    ...rows,
    `| the window, s | ${cell(samples, 'nodelet', (s) => s.windowSeconds, 2)} | ${cell(samples, 'kubelet', (s) => s.windowSeconds, 2)} | |`,
    '',
  ];
}

export function renderCriCalls(report: CriCallsReport): string {
  const { machine, samples } = report;
  const sizes = [...new Set(samples.map((s) => s.pods))];
  const rounds = Math.max(0, ...samples.map((s) => s.round));
  return [
    CRI_CALLS_BEGIN_MARKER,
    '## What each agent asks of its runtime while pods start: results',
    '',
    `Run ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, ${machine.os}, kernel ${machine.kernel}; nodelet ${machine.nodelet}, Node.js ${machine.node}, ${machine.containerd}, Kubernetes ${machine.kubernetes}.`,
    `Command: \`${report.command}\`: ${sizes.join(' and ')} pods created at once per node, ${rounds} round${rounds === 1 ? '' : 's'}, nodes alternating (rotated each round); each agent's \`${CRI_OPERATIONS_METRIC}\` read before the first create and once the last pod is Running (its relists in that window included), min / **median** / max over the rounds; the ratio is the median of the per-round ratios (range).`,
    '',
    ...sizes.flatMap((size) => renderSize(samples.filter((s) => s.pods === size))),
    CRI_CALLS_END_MARKER,
  ].join('\n');
}
