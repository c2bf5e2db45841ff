/** The summary table of bench/agent-cost.ts: min / median / max per label and batch size. */
import { median, spreadText } from './compare.js';
import { seriesTotal } from './exposition.js';

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
  /** Reconcile runs per pod over the batch and the 5 s after it (the agent's `/metrics`); absent in older lines. */
  readonly reconcilesPerPod?: number;
  /** CRI calls per pod over the same window (every `kubelet_runtime_operations_total`, PLEG's relists too). */
  readonly criCallsPerPod?: number;
}

/** The agent's running totals that the per-pod counts are differences of. */
export interface AgentCounters {
  /** Finished reconcile runs, every outcome (`nodelet_reconcile_job_duration_seconds_count`). */
  readonly reconciles: number;
  /** CRI calls, every operation (`kubelet_runtime_operations_total`). */
  readonly criCalls: number;
}

/** Sums the two counters over every label set of a Prometheus text exposition (the agent's `/metrics`). */
export function agentCounters(exposition: string): AgentCounters {
  return {
    reconciles: seriesTotal(exposition, 'nodelet_reconcile_job_duration_seconds_count') ?? 0,
    criCalls: seriesTotal(exposition, 'kubelet_runtime_operations_total') ?? 0,
  };
}

/** min / median / max of an optional per-pod figure, or – when no sample of the group has it. */
function optionalSpread(values: readonly (number | undefined)[]): string {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? '–' : spreadText(known, 1);
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
    return `| ${label} | ${count} | ${g.length} | ${spreadText(cpu, 2)} | ${perPodMs.toFixed(0)} | ${spreadText(g.map((s) => s.peakRssMiB), 0)} | ${spreadText(g.map((s) => s.rssBeforeMiB), 0)} | ${spreadText(g.map((s) => s.createP50Ms / 1000), 2)} | ${spreadText(g.map((s) => s.throughputPerSec), 2)} | ${optionalSpread(g.map((s) => s.reconcilesPerPod))} | ${optionalSpread(g.map((s) => s.criCallsPerPod))} |`;
  });
  return [
    '| agent | N | runs | CPU s, create + delete (min / median / max) | CPU ms per pod (median) | peak RSS MiB | RSS before MiB | p50 create → Running s | throughput pods/s | reconciles per pod | CRI calls per pod |',
    '| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |',
    ...rows,
    '',
  ].join('\n');
}
