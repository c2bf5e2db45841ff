/**
 * Reads the node's own figures: CPU and memory of the root cgroup (v1: `cpuacct`, `memory`
 * hierarchies; v2: the unified root), falling back to `/proc/stat` and `/proc/meminfo` where the
 * root cgroup does not say, the boot time, and `statfs` of a directory. Paths are injectable so a
 * test can point them at files of its own.
 */
import { readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import { fsFigures, parseKeyValues, parseMeminfo, parseProcStat, workingSetBytes, type FsFigures } from './stats-formulas.js';

/** Where the readers look. */
export interface NodeStatsPaths {
  readonly procDir: string;
  readonly cgroupDir: string;
}

export const HOST_PATHS: NodeStatsPaths = { procDir: '/proc', cgroupDir: '/sys/fs/cgroup' };

/** The node's CPU and memory at one moment. */
export interface NodeReading {
  readonly bootTimeSeconds: number;
  readonly usageCoreNanoSeconds: bigint;
  readonly memory: {
    readonly capacityBytes: bigint;
    readonly usageBytes: bigint;
    readonly workingSetBytes: bigint;
    readonly rssBytes: bigint | undefined;
    readonly pageFaults: bigint | undefined;
    readonly majorPageFaults: bigint | undefined;
  };
  readonly rlimit: { readonly maxpid: number | undefined; readonly curproc: number | undefined };
  /** Swap in use and free (`/proc/meminfo` SwapTotal less SwapFree, and SwapFree); 0 without swap. */
  readonly swap: { readonly usageBytes: bigint; readonly availableBytes: bigint };
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Root cgroup CPU time: v1 `cpuacct.usage` (ns), v2 `cpu.stat` `usage_usec`; else `/proc/stat`. */
async function cpuNanos(paths: NodeStatsPaths, procStat: string): Promise<bigint> {
  const v1 = await readOptional(path.join(paths.cgroupDir, 'cpuacct', 'cpuacct.usage'));
  if (v1 !== undefined && /^\d+\s*$/.test(v1)) return BigInt(v1.trim());
  const v2 = parseKeyValues((await readOptional(path.join(paths.cgroupDir, 'cpu.stat'))) ?? '').get('usage_usec');
  if (v2 !== undefined) return v2 * 1000n;
  return parseProcStat(procStat).busyNanoSeconds;
}

/** Root memory: v1 from `memory.usage_in_bytes` and `total_*` of `memory.stat`; v2 (no root usage file) from meminfo. */
async function memory(paths: NodeStatsPaths, meminfo: Map<string, bigint>): Promise<NodeReading['memory']> {
  const capacityBytes = meminfo.get('MemTotal') ?? 0n;
  const v1Usage = await readOptional(path.join(paths.cgroupDir, 'memory', 'memory.usage_in_bytes'));
  if (v1Usage !== undefined && /^\d+\s*$/.test(v1Usage)) {
    const stat = parseKeyValues((await readOptional(path.join(paths.cgroupDir, 'memory', 'memory.stat'))) ?? '');
    const usageBytes = BigInt(v1Usage.trim());
    return {
      capacityBytes,
      usageBytes,
      workingSetBytes: workingSetBytes(usageBytes, stat.get('total_inactive_file') ?? 0n),
      rssBytes: stat.get('total_rss'),
      pageFaults: stat.get('total_pgfault'),
      majorPageFaults: stat.get('total_pgmajfault'),
    };
  }
  const stat = parseKeyValues((await readOptional(path.join(paths.cgroupDir, 'memory.stat'))) ?? '');
  const usageBytes = capacityBytes - (meminfo.get('MemFree') ?? 0n);
  const inactiveFile = stat.get('inactive_file') ?? meminfo.get('Inactive(file)') ?? 0n;
  return { capacityBytes, usageBytes, workingSetBytes: workingSetBytes(usageBytes, inactiveFile), rssBytes: stat.get('anon'), pageFaults: stat.get('pgfault'), majorPageFaults: stat.get('pgmajfault') };
}

async function rlimit(paths: NodeStatsPaths): Promise<NodeReading['rlimit']> {
  const pidMax = await readOptional(path.join(paths.procDir, 'sys', 'kernel', 'pid_max'));
  // `/proc/loadavg`'s fourth field is running/total tasks.
  const total = (await readOptional(path.join(paths.procDir, 'loadavg')))?.split(/\s+/)[3]?.split('/')[1];
  return { maxpid: pidMax === undefined ? undefined : Number(pidMax.trim()), curproc: total === undefined ? undefined : Number(total) };
}

/** Reads the node's CPU, memory and process figures. */
export async function readNode(paths: NodeStatsPaths = HOST_PATHS): Promise<NodeReading> {
  const procStat = await readFile(path.join(paths.procDir, 'stat'), 'utf8');
  const meminfo = parseMeminfo(await readFile(path.join(paths.procDir, 'meminfo'), 'utf8'));
  return {
    bootTimeSeconds: parseProcStat(procStat).bootTimeSeconds,
    usageCoreNanoSeconds: await cpuNanos(paths, procStat),
    memory: await memory(paths, meminfo),
    rlimit: await rlimit(paths),
    swap: { usageBytes: (meminfo.get('SwapTotal') ?? 0n) - (meminfo.get('SwapFree') ?? 0n), availableBytes: meminfo.get('SwapFree') ?? 0n },
  };
}

/** `statfs` of the filesystem holding `dir`. */
export async function readFs(dir: string): Promise<FsFigures> {
  return fsFigures(await statfs(dir));
}
