/**
 * The probe-CPU benchmark's results (`bench/probe-cpu.ts`): per variant, the agent's CPU over a
 * fixed window with all pods Running and Ready, across interleaved rounds, as min / median / max;
 * the headline is the ratio with probes ÷ without, per round (measured back to back) and of the
 * medians. Pure: the numbers in, markdown out.
 */
import type { MachineInfo } from './machine.js';
import { percentile } from './stats.js';
import { spreadText } from './compare.js';

export const PROBE_BEGIN_MARKER = '<!-- BEGIN probe-cpu results: written by bench/probe-cpu.ts, do not edit by hand -->';
export const PROBE_END_MARKER = '<!-- END probe-cpu results -->';

/** One measurement window of one variant in one round. */
export interface ProbeSample {
  readonly variant: 'no probes' | 'probes';
  readonly round: number;
  /** Agent CPU seconds (utime + stime) over the window. */
  readonly cpuSeconds: number;
  readonly windowSeconds: number;
  /** Largest agent VmRSS seen during the window. */
  readonly peakRssBytes: number;
  /** Pods Running and Ready when the window started and when it ended. */
  readonly readyAtStart: number;
  readonly readyAtEnd: number;
}

/** What a run measured. */
export interface ProbeReport {
  readonly machine: MachineInfo;
  readonly pods: number;
  readonly periodSeconds: number;
  readonly samples: readonly ProbeSample[];
}

/** Agent CPU as a percentage of one core over the window. */
export function cpuPercent(s: ProbeSample): number {
  return (s.cpuSeconds / s.windowSeconds) * 100;
}

/** Per round that has both variants: CPU with probes ÷ without. */
export function roundRatios(samples: readonly ProbeSample[]): number[] {
  const rounds = [...new Set(samples.map((s) => s.round))].sort((a, b) => a - b);
  return rounds.flatMap((round) => {
    const without = samples.find((s) => s.round === round && s.variant === 'no probes');
    const withProbes = samples.find((s) => s.round === round && s.variant === 'probes');
    if (without === undefined || withProbes === undefined || without.cpuSeconds <= 0) return [];
    return [withProbes.cpuSeconds / without.cpuSeconds];
  });
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function variantRow(samples: readonly ProbeSample[], variant: ProbeSample['variant']): string {
  const mine = samples.filter((s) => s.variant === variant);
  const cpu = mine.map(cpuPercent);
  const rss = mine.map((s) => s.peakRssBytes);
  return `| ${variant} | ${mine.length} | ${spreadText(cpu)} | ${mib(Math.max(...rss))} |`;
}

/** The results block, markers included. */
export function renderProbeResults(report: ProbeReport): string {
  const { machine, samples } = report;
  const ratios = roundRatios(samples);
  const median = (variant: ProbeSample['variant']): number => percentile(samples.filter((s) => s.variant === variant).map(cpuPercent), 50);
  const probesPerSecond = (report.pods * 2) / report.periodSeconds;
  return [
    PROBE_BEGIN_MARKER,
    '## Probe CPU: results',
    '',
    `Run ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, ${machine.os}, kernel ${machine.kernel}; nodelet ${machine.nodelet}, Node.js ${machine.node}, ${machine.containerd}, Kubernetes ${machine.kubernetes}.`,
    `${report.pods} pods, each with an httpGet readiness probe and a tcpSocket liveness probe every ${report.periodSeconds} s (${probesPerSecond} probes/s), against the same ${report.pods} pods without probes; ${ratios.length} rounds, variants interleaved.`,
    '',
    `**Agent CPU with probes ÷ without: ${spreadText(ratios)} (min / median / max of the per-round ratios); medians ${median('probes').toFixed(1)} % vs ${median('no probes').toFixed(1)} % of one core.**`,
    '',
    '| variant | windows | agent CPU, % of one core (min / median / max) | peak RSS |',
    '| --- | --: | --- | --: |',
    variantRow(samples, 'no probes'),
    variantRow(samples, 'probes'),
    '',
    '| round | variant | window | CPU seconds | % of one core | Ready at start / end |',
    '| --: | --- | --: | --: | --: | --- |',
    ...samples.map((s) => `| ${s.round} | ${s.variant} | ${s.windowSeconds} s | ${s.cpuSeconds.toFixed(2)} | ${cpuPercent(s).toFixed(1)} | ${s.readyAtStart} / ${s.readyAtEnd} |`),
    PROBE_END_MARKER,
  ].join('\n');
}
