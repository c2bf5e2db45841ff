/** The summary table of bench/agent-cost.ts: min / median / max per label and batch size. */
import { median, spreadText } from './compare.js';

/** One batch of N pods through the agent, as bench/agent-cost.ts records it. */
export interface CostSample {
  readonly label: string;
  readonly count: number;
  readonly round: number;
  /** Agent CPU seconds (utime + stime) over create and delete. */
  readonly cpuSeconds: number;
  readonly cpuSecondsCreate: number;
  readonly peakRssMiB: number;
  readonly rssBeforeMiB: number;
  readonly createP50Ms: number;
  readonly throughputPerSec: number;
  readonly deleteAllGoneMs: number;
}

/** A markdown table: one row per label and size, in the order they first appear. */
export function renderCostSummary(samples: readonly CostSample[]): string {
  const groups = new Map<string, CostSample[]>();
  for (const s of samples) {
    const key = `${s.label}\u0000${s.count}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  const rows = [...groups.values()].map((g) => {
    const { label, count } = g[0]!;
    const cpu = g.map((s) => s.cpuSeconds);
    const perPodMs = median(cpu) * 1000 / count;
    return `| ${label} | ${count} | ${g.length} | ${spreadText(cpu, 2)} | ${perPodMs.toFixed(0)} | ${spreadText(g.map((s) => s.peakRssMiB), 0)} | ${spreadText(g.map((s) => s.rssBeforeMiB), 0)} | ${spreadText(g.map((s) => s.createP50Ms / 1000), 2)} | ${spreadText(g.map((s) => s.throughputPerSec), 2)} |`;
  });
  return [
    '| agent | N | runs | CPU s, create + delete (min / median / max) | CPU ms per pod (median) | peak RSS MiB | RSS before MiB | p50 create → Running s | throughput pods/s |',
    '| --- | --: | --: | --: | --: | --: | --: | --: | --: |',
    ...rows,
    '',
  ].join('\n');
}
