/**
 * Where the machine's CPU goes while a batch of pods starts (`npm run bench:cpu`): the CPU time
 * of every process between two snapshots, grouped by the part of the system it belongs to, per
 * pod, for each path (nodelet, the kubelet, raw CRI). Pure: snapshots in, groups and markdown out.
 */
import type { MachineInfo } from './machine.js';
import type { CpuSnapshot, ProcessCpu } from './machine-cpu.js';
import { spread, type Target } from './compare.js';

export type CpuGroup = 'agent' | 'queue (Redis)' | 'control plane' | 'runtime' | 'kernel threads' | 'bench client' | 'other';

/** The groups in the order of the report. */
export const CPU_GROUPS: readonly CpuGroup[] = ['agent', 'queue (Redis)', 'control plane', 'runtime', 'kernel threads', 'bench client', 'other'];

/** Which processes play which part in the path being measured. */
export interface CpuRoles {
  /** The measured path's agent (nodelet's or the kubelet's process); undefined for raw CRI. */
  readonly agentPid: number | undefined;
  /** The benchmark's own process: the API client that creates and watches the pods, or the raw CRI client. */
  readonly benchPid: number;
  /** Whether Redis is part of the path (nodelet's queue); otherwise it counts as other. */
  readonly withQueue: boolean;
}

/** The kernel's names (`comm`) of the control plane's processes; kube-controller-manager's is cut to 15 characters. */
const CONTROL_PLANE = new Set(['kube-apiserver', 'etcd', 'kube-scheduler', 'kube-controller', 'metrics-server']);
/** containerd, its shims (containerd-shim-runc-v2, cut to 15) and runc. */
const RUNTIME = new Set(['containerd', 'containerd-shim', 'runc']);
/** kthreadd's pid: every kernel thread is it or its child. */
const KTHREADD = 2;

function underShim(process: ProcessCpu, byPid: ReadonlyMap<number, ProcessCpu>): boolean {
  const seen = new Set<number>();
  for (let p = byPid.get(process.ppid); p !== undefined && !seen.has(p.pid); p = byPid.get(p.ppid)) {
    if (p.name === 'containerd-shim') return true;
    seen.add(p.pid);
  }
  return false;
}

/**
 * The group of one process. The containers' own processes (pause, the busybox shell) are the
 * runtime's: they are the work every path asks of it. Both nodes' containerds count as runtime.
 */
export function classifyProcess(process: ProcessCpu, byPid: ReadonlyMap<number, ProcessCpu>, roles: CpuRoles): CpuGroup {
  if (process.pid === roles.agentPid) return 'agent';
  if (process.pid === roles.benchPid) return 'bench client';
  if (process.name === 'redis-server') return roles.withQueue ? 'queue (Redis)' : 'other';
  if (CONTROL_PLANE.has(process.name)) return 'control plane';
  if (process.pid === KTHREADD || process.ppid === KTHREADD) return 'kernel threads';
  if (RUNTIME.has(process.name) || underShim(process, byPid)) return 'runtime';
  return 'other';
}

/** CPU seconds per group between two snapshots, and the machine's busy and idle seconds. */
export interface CpuSplit {
  readonly groups: Readonly<Record<CpuGroup, number>>;
  readonly busySeconds: number;
  readonly idleSeconds: number;
}

const processKey = (p: ProcessCpu): string => `${p.pid}:${p.startTicks}`;

/**
 * Each process's CPU between the snapshots, summed by group: a process started in between counts
 * whole; one that exited in between is missing (its time shows in the parent that reaped it, if
 * that parent is still there).
 */
export function splitCpu(before: CpuSnapshot, after: CpuSnapshot, roles: CpuRoles): CpuSplit {
  const earlier = new Map(before.processes.map((p) => [processKey(p), p.cpuSeconds]));
  const byPid = new Map(after.processes.map((p) => [p.pid, p]));
  const groups = Object.fromEntries(CPU_GROUPS.map((g) => [g, 0])) as Record<CpuGroup, number>;
  for (const process of after.processes) {
    const used = process.cpuSeconds - (earlier.get(processKey(process)) ?? 0);
    groups[classifyProcess(process, byPid, roles)] += Math.max(0, used);
  }
  return { groups, busySeconds: after.machine.busySeconds - before.machine.busySeconds, idleSeconds: after.machine.idleSeconds - before.machine.idleSeconds };
}

/** One batch's create window on one path. */
export interface CpuSplitSample {
  readonly target: Target;
  readonly round: number;
  readonly pods: number;
  /** Pods Running (not rejected) at the end of the window. */
  readonly running: number;
  readonly windowSeconds: number;
  readonly split: CpuSplit;
}

export interface CpuSplitReport {
  readonly machine: MachineInfo;
  readonly command: string;
  readonly samples: readonly CpuSplitSample[];
}

export const CPU_SPLIT_BEGIN_MARKER = '<!-- BEGIN cpu-split results: written by bench/cpu-split.ts, do not edit by hand -->';
export const CPU_SPLIT_END_MARKER = '<!-- END cpu-split results -->';

const perPodMs = (seconds: number, s: CpuSplitSample): number => (seconds * 1000) / s.pods;
const busyShare = (s: CpuSplitSample): number => (100 * s.split.busySeconds) / (s.split.busySeconds + s.split.idleSeconds);
const accounted = (s: CpuSplitSample): number => CPU_GROUPS.reduce((sum, g) => sum + s.split.groups[g], 0);

/** The machine's pods/s if every core were busy with this path's work at its measured CPU per pod. */
export function ceilingPodsPerSecond(s: CpuSplitSample, cores: number): number {
  return (cores * s.pods) / s.split.busySeconds;
}

/**
 * The ceiling nodelet's path would have if its agent and queue cost the machine nothing: the cores
 * ÷ what the rest of the machine spent per pod. An upper bound on what making the agent cheaper
 * can buy on this machine.
 */
export function agentFreeCeilingPodsPerSecond(s: CpuSplitSample, cores: number): number {
  return (cores * s.pods) / (s.split.busySeconds - s.split.groups.agent - s.split.groups['queue (Redis)']);
}

/**
 * nodelet's value ÷ the other path's, per round that has both (the paths of a round ran back to
 * back); `peerValue` reads the other path's sample (default: the same measure).
 */
export function roundRatios(samples: readonly CpuSplitSample[], other: Target, value: (s: CpuSplitSample) => number, peerValue: (s: CpuSplitSample) => number = value): number[] {
  return samples.flatMap((s) => {
    const peer = s.target === 'nodelet' ? samples.find((p) => p.target === other && p.round === s.round) : undefined;
    return peer === undefined ? [] : [value(s) / peerValue(peer)];
  });
}

const machinePerPodMs = (s: CpuSplitSample): number => perPodMs(s.split.busySeconds, s);
const throughput = (s: CpuSplitSample): number => s.running / s.windowSeconds;

/** The tables of one batch size: CPU per pod by part and path, the window, and nodelet's ratios. */
function renderSize(samples: readonly CpuSplitSample[], cores: number): string[] {
  const targets = (['nodelet', 'kubelet', 'raw CRI'] as const).filter((t) => samples.some((s) => s.target === t));
  const row = (label: string, value: (s: CpuSplitSample) => number, digits: number): string => {
    const cells = targets.map((t) => {
      const sp = spread(samples.filter((s) => s.target === t).map(value));
      return sp === undefined ? '–' : `${sp.min.toFixed(digits)} / **${sp.median.toFixed(digits)}** / ${sp.max.toFixed(digits)}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  };
  const ratioText = (other: Target, value: (s: CpuSplitSample) => number, peerValue: (s: CpuSplitSample) => number = value): string => {
    const sp = spread(roundRatios(samples, other, value, peerValue));
    return sp === undefined ? 'n/a' : `**${sp.median.toFixed(2)}×** (${sp.min.toFixed(2)}–${sp.max.toFixed(2)})`;
  };
  const ceiling = (s: CpuSplitSample): number => ceilingPodsPerSecond(s, cores);
  const agentFree = (s: CpuSplitSample): number => agentFreeCeilingPodsPerSecond(s, cores);
  return [
    `### ${samples[0]?.pods ?? 0} pods`,
    '',
    `| ms of CPU per pod | ${targets.join(' | ')} |`,
    `| --- | ${targets.map(() => '--:').join(' | ')} |`,
    ...CPU_GROUPS.map((g) => row(g, (s) => perPodMs(s.split.groups[g], s), 1)),
    row('**all processes above**', (s) => perPodMs(accounted(s), s), 1),
    row('**machine busy** (/proc/stat)', machinePerPodMs, 1),
    '',
    `| the window | ${targets.join(' | ')} |`,
    `| --- | ${targets.map(() => '--:').join(' | ')} |`,
    row('seconds', (s) => s.windowSeconds, 2),
    row('machine busy, % of all cores', busyShare, 1),
    row('throughput, pods Running ÷ window, pods/s', throughput, 2),
    row(`ceiling at that CPU per pod, ${cores} cores ÷ machine busy per pod, pods/s`, ceiling, 2),
    '',
    'nodelet ÷ the other path, median of the per-round ratios (range):',
    '',
    '| measure | ÷ kubelet | ÷ raw CRI |',
    '| --- | --- | --- |',
    `| machine busy per pod | ${ratioText('kubelet', machinePerPodMs)} | ${ratioText('raw CRI', machinePerPodMs)} |`,
    `| ceiling, pods/s | ${ratioText('kubelet', ceiling)} | ${ratioText('raw CRI', ceiling)} |`,
    `| throughput | ${ratioText('kubelet', throughput)} | ${ratioText('raw CRI', throughput)} |`,
    `| ceiling if nodelet's agent and queue cost nothing, ÷ the other path's ceiling | ${ratioText('kubelet', agentFree, ceiling)} | ${ratioText('raw CRI', agentFree, ceiling)} |`,
    '',
  ];
}

/** The results block for docs/benchmarks.md: one part per batch size, in the order they ran. */
export function renderCpuSplit(report: CpuSplitReport): string {
  const { machine, samples } = report;
  const sizes = [...new Set(samples.map((s) => s.pods))];
  const rounds = Math.max(0, ...samples.map((s) => s.round));
  return [
    CPU_SPLIT_BEGIN_MARKER,
    '## Where the CPU goes while pods start: results',
    '',
    `Run ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, ${machine.os}, kernel ${machine.kernel}; nodelet ${machine.nodelet}, Node.js ${machine.node}, ${machine.containerd}, Kubernetes ${machine.kubernetes}.`,
    `Command: \`${report.command}\`: ${sizes.join(' and ')} pods created at once per path, ${rounds} round${rounds === 1 ? '' : 's'}, paths alternating (rotated each round); from the first create to the last pod Running, min / **median** / max over the rounds.`,
    '',
    ...sizes.flatMap((size) => renderSize(samples.filter((s) => s.pods === size), machine.cpus)),
    CPU_SPLIT_END_MARKER,
  ].join('\n');
}
