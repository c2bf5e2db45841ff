/**
 * The node server benchmark's results (`bench/node-server.ts`): log streaming throughput per path,
 * exec round trips through nodelet vs the runtime's own streaming server, and the agent's memory
 * with 50 followers vs idle; min / median / max over interleaved rounds, and ratios of variants
 * measured in the same round. Pure: the numbers in, markdown out.
 */
import type { MachineInfo } from './machine.js';
import { spreadText } from './compare.js';

export const SERVER_BEGIN_MARKER = '<!-- BEGIN node-server results: written by bench/node-server.ts, do not edit by hand -->';
export const SERVER_END_MARKER = '<!-- END node-server results -->';

/** The ways a container's log is read. */
export type LogPath = 'file read' | 'crictl logs' | 'node server' | 'API server proxy';
/** The ways a command is run in a container. */
export type ExecPath = 'crictl exec' | 'kubectl exec';

/** One measurement of one variant in one round. */
export interface Sample<V extends string> {
  readonly variant: V;
  readonly round: number;
  readonly value: number;
}

/** What a run measured. */
export interface ServerReport {
  readonly machine: MachineInfo;
  readonly logBytes: number;
  readonly execRepeats: number;
  readonly followers: number;
  /** MiB/s of the log file's bytes. */
  readonly logs: readonly Sample<LogPath>[];
  /** Median ms of one round's repeats. */
  readonly exec: readonly Sample<ExecPath>[];
  /** Agent VmRSS, MiB (mean of the window). */
  readonly rss: readonly Sample<'idle' | 'followers'>[];
}

/** Per round with both: a ÷ b. */
export function ratios<V extends string>(samples: readonly Sample<V>[], a: V, b: V): number[] {
  const rounds = [...new Set(samples.map((s) => s.round))].sort((x, y) => x - y);
  return rounds.flatMap((round) => {
    const top = samples.find((s) => s.round === round && s.variant === a);
    const bottom = samples.find((s) => s.round === round && s.variant === b);
    return top === undefined || bottom === undefined || bottom.value <= 0 ? [] : [top.value / bottom.value];
  });
}

/** Per round with both: a − b. */
export function differences<V extends string>(samples: readonly Sample<V>[], a: V, b: V): number[] {
  const rounds = [...new Set(samples.map((s) => s.round))].sort((x, y) => x - y);
  return rounds.flatMap((round) => {
    const top = samples.find((s) => s.round === round && s.variant === a);
    const bottom = samples.find((s) => s.round === round && s.variant === b);
    return top === undefined || bottom === undefined ? [] : [top.value - bottom.value];
  });
}

const of = <V extends string>(samples: readonly Sample<V>[], variant: V): number[] => samples.filter((s) => s.variant === variant).map((s) => s.value);

/** The results block, markers included. */
export function renderServerResults(report: ServerReport): string {
  const { machine } = report;
  const logPaths: LogPath[] = ['file read', 'crictl logs', 'node server', 'API server proxy'];
  const rounds = new Set(report.logs.map((s) => s.round)).size;
  const rssDelta = differences(report.rss, 'followers', 'idle');
  return [
    SERVER_BEGIN_MARKER,
    '## Node server: results',
    '',
    `Run ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, ${machine.os}, kernel ${machine.kernel}; nodelet ${machine.nodelet}, Node.js ${machine.node}, ${machine.containerd}, Kubernetes ${machine.kubernetes}. ${rounds} rounds, variants interleaved (the order rotates each round).`,
    '',
    `**Log streaming, node server ÷ file read: ${spreadText(ratios(report.logs, 'node server', 'file read'), 2)}; API server proxy ÷ node server: ${spreadText(ratios(report.logs, 'API server proxy', 'node server'), 2)} (per-round ratios of throughput, min / median / max).**`,
    `**Exec round trip, kubectl exec ÷ crictl exec: ${spreadText(ratios(report.exec, 'kubectl exec', 'crictl exec'), 2)}.**`,
    `**Agent RSS with ${report.followers} followers − idle: ${spreadText(rssDelta)} MiB.**`,
    '',
    `Log of ${(report.logBytes / 2 ** 20).toFixed(1)} MiB (CRI format on disk), read whole; throughput in MiB/s of the file's bytes:`,
    '',
    '| path | MiB/s (min / median / max) |',
    '| --- | --- |',
    ...logPaths.map((p) => `| ${p} | ${spreadText(of(report.logs, p))} |`),
    '',
    `Exec of \`true\`, ${report.execRepeats} per variant per round, each round's median; ms (min / median / max over rounds):`,
    '',
    '| path | ms |',
    '| --- | --- |',
    `| crictl exec (runtime's streaming server) | ${spreadText(of(report.exec, 'crictl exec'))} |`,
    `| kubectl exec (API server → nodelet → runtime) | ${spreadText(of(report.exec, 'kubectl exec'))} |`,
    '',
    `Agent VmRSS, MiB, mean over the window (min / median / max over rounds): idle ${spreadText(of(report.rss, 'idle'))}; with ${report.followers} \`logs -f\` streams ${spreadText(of(report.rss, 'followers'))}.`,
    SERVER_END_MARKER,
  ].join('\n');
}
