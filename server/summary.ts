/**
 * The Summary API (`k8s.io/kubelet/pkg/apis/stats/v1alpha1`) built from plain figures: the node,
 * then one entry per ready pod sandbox with its running containers. A pod's CPU and memory are
 * the sums of its containers' (nodelet does not call ListPodSandboxStats: summing works with
 * every runtime, whatever its support of that call). A figure the runtime did not report is omitted, never written as 0.
 */
import type { ContainerStats, PodSandbox } from '../cri/types.js';
import type { NodeReading } from './node-stats.js';
import { apiTime, type FsFigures } from './stats-formulas.js';
import type { DirUsage } from '../util/dir-usage.js';
import type { VolumeUsage } from './volume-stats.js';

export interface CpuStats { time: string; usageNanoCores?: number; usageCoreNanoSeconds?: number }
export interface MemoryStats { time: string; availableBytes?: number; usageBytes?: number; workingSetBytes?: number; rssBytes?: number; pageFaults?: number; majorPageFaults?: number }
export interface FsStats { time: string; availableBytes?: number; capacityBytes?: number; usedBytes?: number; inodesFree?: number; inodes?: number; inodesUsed?: number }
export interface SwapStats { time: string; swapAvailableBytes?: number; swapUsageBytes?: number }
export interface ContainerSummary { name: string; startTime: string; cpu?: CpuStats; memory?: MemoryStats; swap?: SwapStats; rootfs?: FsStats; logs?: FsStats }
export interface VolumeStats extends FsStats { name: string }
export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerSummary[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  swap?: SwapStats;
  'ephemeral-storage'?: FsStats;
  volume?: VolumeStats[];
}
export interface NodeSummary {
  nodeName: string;
  startTime: string;
  cpu: CpuStats;
  memory: MemoryStats;
  swap?: SwapStats;
  fs: FsStats;
  runtime: { imageFs?: FsStats };
  rlimit: { time: string; maxpid?: number; curproc?: number };
}
/** The answer of `/stats/summary`. */
export interface Summary { node: NodeSummary; pods: PodSummary[] }

/** One running container with its figures. */
export interface ContainerInput {
  readonly sandboxId: string;
  readonly name: string;
  readonly createdAt: bigint;
  readonly stats: ContainerStats | undefined;
  /** From two samples (stats-collector.ts), unless the runtime gave it. */
  readonly nanoCores: bigint | undefined;
}

/** Everything the summary is built from. */
export interface SummaryInput {
  readonly nodeName: string;
  /** Nanoseconds since the epoch: when the node figures were read. */
  readonly now: bigint;
  readonly node: NodeReading;
  readonly nodeNanoCores: bigint | undefined;
  readonly rootFs: FsFigures;
  /** The image filesystem's `statfs` with the runtime's own usage of it, if the runtime said. */
  readonly imageFs: { readonly fs: FsFigures; readonly usedBytes: bigint; readonly inodesUsed: bigint } | undefined;
  readonly sandboxes: readonly PodSandbox[];
  readonly containers: readonly ContainerInput[];
  /** Per pod UID: its measured volumes and each container's log files (by container name). */
  readonly storage?: ReadonlyMap<string, PodStorage>;
}

/** A pod's local storage besides its containers' writable layers. */
export interface PodStorage {
  readonly volumes: readonly VolumeUsage[];
  readonly logs: ReadonlyMap<string, { readonly usage: DirUsage; readonly fs: FsFigures }>;
}

function field<K extends string>(key: K, value: bigint | number | undefined): Partial<Record<K, number>> {
  if (value === undefined) return {};
  const out: Partial<Record<K, number>> = {};
  out[key] = Number(value);
  return out;
}

function fsStats(time: string, fs: FsFigures): FsStats {
  return { time, ...fs };
}

function nodeSummary(input: SummaryInput): NodeSummary {
  const time = apiTime(input.now);
  const m = input.node.memory;
  const image = input.imageFs;
  return {
    nodeName: input.nodeName,
    startTime: apiTime(BigInt(input.node.bootTimeSeconds) * 1_000_000_000n),
    cpu: { time, ...field('usageNanoCores', input.nodeNanoCores), usageCoreNanoSeconds: Number(input.node.usageCoreNanoSeconds) },
    memory: {
      time,
      // The kubelet's node available: capacity less the working set.
      availableBytes: Number(m.capacityBytes > m.workingSetBytes ? m.capacityBytes - m.workingSetBytes : 0n),
      usageBytes: Number(m.usageBytes),
      workingSetBytes: Number(m.workingSetBytes),
      ...field('rssBytes', m.rssBytes),
      ...field('pageFaults', m.pageFaults),
      ...field('majorPageFaults', m.majorPageFaults),
    },
    swap: { time, swapAvailableBytes: Number(input.node.swap.availableBytes), swapUsageBytes: Number(input.node.swap.usageBytes) },
    fs: fsStats(time, input.rootFs),
    runtime: image === undefined ? {} : { imageFs: { ...fsStats(time, image.fs), usedBytes: Number(image.usedBytes), inodesUsed: Number(image.inodesUsed) } },
    rlimit: { time, ...field('maxpid', input.node.rlimit.maxpid), ...field('curproc', input.node.rlimit.curproc) },
  };
}

function withLogs(summary: ContainerSummary, logs: { readonly usage: DirUsage; readonly fs: FsFigures } | undefined, time: string): ContainerSummary {
  if (logs === undefined) return summary;
  const { capacityBytes, availableBytes, inodes, inodesFree } = logs.fs;
  return { ...summary, logs: { time, capacityBytes, availableBytes, inodes, inodesFree, usedBytes: logs.usage.usedBytes, inodesUsed: logs.usage.inodesUsed } };
}

function volumeStats(v: VolumeUsage, time: string): VolumeStats {
  const { capacityBytes, availableBytes, inodes, inodesFree } = v.fs;
  return { time, name: v.name, capacityBytes, availableBytes, inodes, inodesFree, usedBytes: v.usedBytes, inodesUsed: v.inodesUsed };
}

function containerSummary(c: ContainerInput, imageFs: SummaryInput['imageFs']): ContainerSummary {
  const cpu = c.stats?.cpu;
  const memory = c.stats?.memory;
  const layer = c.stats?.writableLayer;
  const swap = c.stats?.swap;
  const capacity = imageFs === undefined ? {} : { capacityBytes: imageFs.fs.capacityBytes, availableBytes: imageFs.fs.availableBytes, inodes: imageFs.fs.inodes, inodesFree: imageFs.fs.inodesFree };
  return {
    name: c.name,
    startTime: apiTime(c.createdAt),
    ...(cpu === undefined ? {} : { cpu: { time: apiTime(cpu.timestamp), ...field('usageNanoCores', cpu.usageNanoCores ?? c.nanoCores), ...field('usageCoreNanoSeconds', cpu.usageCoreNanoSeconds) } }),
    ...(memory === undefined
      ? {}
      : {
          memory: {
            time: apiTime(memory.timestamp),
            ...field('availableBytes', memory.availableBytes),
            ...field('usageBytes', memory.usageBytes),
            ...field('workingSetBytes', memory.workingSetBytes),
            ...field('rssBytes', memory.rssBytes),
            ...field('pageFaults', memory.pageFaults),
            ...field('majorPageFaults', memory.majorPageFaults),
          },
        }),
    ...(swap === undefined ? {} : { swap: { time: apiTime(swap.timestamp), ...field('swapAvailableBytes', swap.availableBytes), ...field('swapUsageBytes', swap.usageBytes) } }),
    ...(layer === undefined ? {} : { rootfs: { time: apiTime(layer.timestamp), ...capacity, ...field('usedBytes', layer.usedBytes), ...field('inodesUsed', layer.inodesUsed) } }),
  };
}

/** Sum of one figure over the containers; `undefined` unless every container reported it. */
function sum<T>(items: readonly T[], pick: (item: T) => number | undefined): number | undefined {
  let total = 0;
  for (const item of items) {
    const value = pick(item);
    if (value === undefined) return undefined;
    total += value;
  }
  return items.length === 0 ? undefined : total;
}

function latest(times: readonly (string | undefined)[], fallback: string): string {
  return times.reduce<string>((max, t) => (t !== undefined && t > max ? t : max), fallback);
}

/** The pod's swap: its containers' usage summed, when every container reported it. */
function podSwap(containers: readonly ContainerSummary[], time: string): Pick<PodSummary, 'swap'> {
  const usage = sum(containers, (c) => c.swap?.swapUsageBytes);
  return usage === undefined ? {} : { swap: { time: latest(containers.map((c) => c.swap?.time), time), swapUsageBytes: usage } };
}

function podTotals(containers: readonly ContainerSummary[], volumes: readonly VolumeStats[], input: { time: string; rootFs: FsFigures }): Pick<PodSummary, 'cpu' | 'memory' | 'swap' | 'ephemeral-storage'> {
  const { time } = input;
  const cpuTime = latest(containers.map((c) => c.cpu?.time), time);
  const memTime = latest(containers.map((c) => c.memory?.time), time);
  // The kubelet's pod ephemeral storage: writable layers, logs and the pod-managed volumes.
  const layers = sum(containers, (c) => c.rootfs?.usedBytes ?? 0) ?? 0;
  const logs = sum(containers, (c) => c.logs?.usedBytes ?? 0) ?? 0;
  const volumeBytes = volumes.reduce((total, v) => total + (v.usedBytes ?? 0), 0);
  const inodesUsed = containers.reduce((t, c) => t + (c.rootfs?.inodesUsed ?? 0) + (c.logs?.inodesUsed ?? 0), 0) + volumes.reduce((t, v) => t + (v.inodesUsed ?? 0), 0);
  const { capacityBytes, availableBytes, inodes, inodesFree } = input.rootFs;
  return {
    cpu: { time: cpuTime, ...field('usageNanoCores', sum(containers, (c) => c.cpu?.usageNanoCores)), ...field('usageCoreNanoSeconds', sum(containers, (c) => c.cpu?.usageCoreNanoSeconds)) },
    memory: { time: memTime, ...field('usageBytes', sum(containers, (c) => c.memory?.usageBytes)), ...field('workingSetBytes', sum(containers, (c) => c.memory?.workingSetBytes)), ...field('rssBytes', sum(containers, (c) => c.memory?.rssBytes)) },
    ...podSwap(containers, time),
    'ephemeral-storage': { time, capacityBytes, availableBytes, inodes, inodesFree, usedBytes: layers + logs + volumeBytes, inodesUsed },
  };
}

/** The Summary: the node and every ready sandbox's pod with its running containers (by name). */
export function buildSummary(input: SummaryInput): Summary {
  const time = apiTime(input.now);
  const pods = input.sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((sandbox) => podSummary(input, sandbox, time));
  return { node: nodeSummary(input), pods };
}

function podSummary(input: SummaryInput, sandbox: PodSandbox, time: string): PodSummary {
  const { name, namespace, uid } = sandbox.metadata;
  const storage = input.storage?.get(uid);
  const containers = input.containers
    .filter((c) => c.sandboxId === sandbox.id)
    .map((c) => withLogs(containerSummary(c, input.imageFs), storage?.logs.get(c.name), time))
    .sort((a, b) => a.name.localeCompare(b.name));
  const volumes = (storage?.volumes ?? []).map((v) => volumeStats(v, time));
  return {
    podRef: { name, namespace, uid },
    startTime: apiTime(sandbox.createdAt),
    containers,
    ...(containers.length === 0 ? {} : podTotals(containers, volumes, { time, rootFs: input.rootFs })),
    ...(volumes.length === 0 ? {} : { volume: volumes }),
  };
}

/** `?only_cpu_and_memory=true`: the node's and each pod's and container's times, CPU and memory only. */
export function cpuAndMemoryOnly(summary: Summary): unknown {
  const { nodeName, startTime, cpu, memory } = summary.node;
  return {
    node: { nodeName, startTime, cpu, memory },
    pods: summary.pods.map((p) => ({
      podRef: p.podRef,
      startTime: p.startTime,
      containers: p.containers.map((c) => ({ name: c.name, startTime: c.startTime, ...(c.cpu === undefined ? {} : { cpu: c.cpu }), ...(c.memory === undefined ? {} : { memory: c.memory }) })),
      ...(p.cpu === undefined ? {} : { cpu: p.cpu }),
      ...(p.memory === undefined ? {} : { memory: p.memory }),
    })),
  };
}
