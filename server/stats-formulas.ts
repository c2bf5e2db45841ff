/**
 * The arithmetic of the node's statistics, on plain data (the readers are in node-stats.ts): the
 * kubelet's and cAdvisor's formulas, so that `/stats/summary` and `/metrics/resource` mean what
 * metrics-server expects.
 */

/** `key value` lines (cgroup `memory.stat`, `cpu.stat`) as a map; lines that do not parse are skipped. */
export function parseKeyValues(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const match = /^(\S+)\s+(\d+)$/.exec(line.trim());
    if (match?.[1] !== undefined && match[2] !== undefined) out.set(match[1], BigInt(match[2]));
  }
  return out;
}

/** `/proc/meminfo` in bytes (`MemTotal:  16 kB` → 16384). */
export function parseMeminfo(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const match = /^([^:]+):\s+(\d+)(\s+kB)?$/.exec(line.trim());
    if (match?.[1] !== undefined && match[2] !== undefined) out.set(match[1], BigInt(match[2]) * (match[3] === undefined ? 1n : 1024n));
  }
  return out;
}

/** What `/proc/stat` says: busy CPU time of all CPUs and the boot time. */
export interface ProcStat {
  /** user + nice + system + irq + softirq + steal, in nanoseconds (idle and iowait are not busy). */
  readonly busyNanoSeconds: bigint;
  /** Seconds since the epoch (`btime`). */
  readonly bootTimeSeconds: number;
}

/** Parses `/proc/stat`; `userHz` is the kernel's clock tick (USER_HZ, 100 on Linux). */
export function parseProcStat(text: string, userHz = 100): ProcStat {
  let busy = 0n;
  let boot = 0;
  for (const line of text.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts[0] === 'cpu') {
      // user nice system idle iowait irq softirq steal
      const [user, nice, system, , , irq, softirq, steal] = parts.slice(1, 9).map((v) => BigInt(v));
      busy = [user, nice, system, irq, softirq, steal].reduce<bigint>((sum, v) => sum + (v ?? 0n), 0n);
    } else if (parts[0] === 'btime') {
      boot = Number(parts[1] ?? 0);
    }
  }
  return { busyNanoSeconds: (busy * 1_000_000_000n) / BigInt(userHz), bootTimeSeconds: boot };
}

/**
 * The working set as the kubelet and cAdvisor define it: usage less inactive file pages (page
 * cache the kernel can drop at once), never below 0.
 */
export function workingSetBytes(usageBytes: bigint, inactiveFileBytes: bigint): bigint {
  return usageBytes > inactiveFileBytes ? usageBytes - inactiveFileBytes : 0n;
}

/** One cumulative CPU reading. */
export interface CpuSample {
  /** Nanoseconds since the epoch. */
  readonly timestamp: bigint;
  readonly usageCoreNanoSeconds: bigint;
}

/**
 * Cores in use between two readings, in nanocores (1e9 = one core busy), as the kubelet's CRI
 * stats provider computes it: `undefined` without an earlier reading, after a counter reset (the
 * container restarted: usage went down) or when no time passed.
 */
export function usageNanoCores(previous: CpuSample | undefined, current: CpuSample): bigint | undefined {
  if (previous === undefined || current.usageCoreNanoSeconds < previous.usageCoreNanoSeconds) return undefined;
  const interval = current.timestamp - previous.timestamp;
  if (interval <= 0n) return undefined;
  return ((current.usageCoreNanoSeconds - previous.usageCoreNanoSeconds) * 1_000_000_000n) / interval;
}

/** A filesystem's figures (Summary API `FsStats`), from `statfs`. */
export interface FsFigures {
  readonly capacityBytes: number;
  readonly availableBytes: number;
  readonly usedBytes: number;
  readonly inodes: number;
  readonly inodesFree: number;
  readonly inodesUsed: number;
}

/** `statfs` fields into FsStats: available is what an unprivileged user may still use (bavail). */
export function fsFigures(s: { readonly bsize: number; readonly blocks: number; readonly bfree: number; readonly bavail: number; readonly files: number; readonly ffree: number }): FsFigures {
  return {
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
}

/** A time as the Summary API writes it (metav1.Time: RFC 3339, whole seconds, UTC). */
export function apiTime(epochNanoSeconds: bigint): string {
  return new Date(Number(epochNanoSeconds / 1_000_000_000n) * 1000).toISOString().replace('.000Z', 'Z');
}
