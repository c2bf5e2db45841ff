/**
 * One cgroup's figures for `/metrics/cadvisor`, parsed from the texts of its control files (the
 * reader, cgroup-stats-reader.ts, does the I/O). Pure. The figures are the ones cAdvisor's
 * libcontainer handler takes from runc's cgroup managers, so that each series means what the
 * kubelet's does:
 *
 * - v1: `cpuacct.usage` (total ns), `cpuacct.stat` (user and system in USER_HZ ticks),
 *   `cpu.stat` (CFS periods, throttled periods, throttled ns); `memory.usage_in_bytes`,
 *   `memory.max_usage_in_bytes`, `memory.failcnt`, `memory.kmem.usage_in_bytes`, `memory.stat`
 *   (`total_*` under a hierarchical memcg), `memory.oom_control` (`oom_kill`); blkio's
 *   `*_recursive` files (the throttle ones when the I/O scheduler's are absent or empty, as runc
 *   falls back); `pids.current`, `pids.max`.
 * - v2: `cpu.stat` (µs), `memory.current`, `memory.peak`, `memory.stat`, `memory.swap.current`,
 *   `memory.events` (`high`, `max`, `oom_kill`; `max` is v2's failcnt, as runc reports it),
 *   `io.stat`, `pids.*`.
 *
 * A figure whose file is absent is `undefined` and its series is left out, never written as 0
 * (except where cAdvisor itself reads a missing key as 0 for a file that is there).
 */
import { parseKeyValues } from './stats-formulas.js';

/** The texts of a cgroup's control files by file name; absent files are not in the map. */
export type CgroupFiles = ReadonlyMap<string, string>;

/** CPU time in nanoseconds and CFS bandwidth counters. */
export interface CpuFigures {
  readonly totalNs: number;
  readonly userNs: number | undefined;
  readonly systemNs: number | undefined;
  /** CFS: elapsed enforcement periods, throttled periods, throttled time (ns). */
  readonly periods: number | undefined;
  readonly throttledPeriods: number | undefined;
  readonly throttledNs: number | undefined;
  /** CFS burst: periods with a burst and the time bursted (ns). */
  readonly burstPeriods: number | undefined;
  readonly burstNs: number | undefined;
}

/** Memory figures in bytes (and counts for faults and events). */
export interface MemoryFigures {
  readonly usage: number;
  readonly maxUsage: number | undefined;
  readonly failcnt: number | undefined;
  readonly kernel: number | undefined;
  readonly cache: number | undefined;
  readonly rss: number | undefined;
  readonly swap: number | undefined;
  readonly mappedFile: number | undefined;
  readonly workingSet: number;
  readonly activeFile: number | undefined;
  readonly inactiveFile: number | undefined;
  readonly pgfault: number | undefined;
  readonly pgmajfault: number | undefined;
  readonly fileDirty: number | undefined;
  readonly fileWriteback: number | undefined;
  /** v2 only: reclaim scans and steals. */
  readonly pgscan: number | undefined;
  readonly pgsteal: number | undefined;
  readonly refaultFile: number | undefined;
  readonly refaultAnon: number | undefined;
  /** v2 only: `memory.events`. */
  readonly eventsHigh: number | undefined;
  readonly eventsMax: number | undefined;
  /** Processes of this cgroup the OOM killer killed. */
  readonly oomKills: number | undefined;
}

/** One block device's count of one operation (`Read`, `Write`, `Total`…). */
export interface DeviceCount {
  readonly major: number;
  readonly minor: number;
  readonly op: string;
  readonly value: number;
}

/** Block I/O by device: bytes and operations. */
export interface IoFigures {
  readonly serviceBytes: readonly DeviceCount[];
  readonly serviced: readonly DeviceCount[];
}

/** The cgroup's limits, as cAdvisor's container spec. */
export interface SpecFigures {
  readonly hasCpu: boolean;
  readonly cpuShares: number;
  readonly cpuPeriodUs: number;
  /** 0: no quota. */
  readonly cpuQuotaUs: number;
  readonly hasMemory: boolean;
  /** `2^64 - 1` for "max" (written as 0 by the exposition, as cAdvisor's specMemoryValue). */
  readonly memoryLimit: number;
  readonly memorySwapLimit: number;
  readonly memoryReservation: number;
}

/** Everything read from one cgroup's control files. */
export interface CgroupFigures {
  readonly cpu: CpuFigures | undefined;
  readonly memory: MemoryFigures | undefined;
  readonly io: IoFigures | undefined;
  /** `pids.current` and `pids.max` (0 for "max", as runc reads it). */
  readonly threads: number | undefined;
  readonly threadsMax: number | undefined;
  readonly spec: SpecFigures;
}

/** The kernel's clock tick (USER_HZ), the unit of v1's `cpuacct.stat`. */
const USER_HZ = 100;

/** What cAdvisor reads "max" as (`2^64 - 1`, which a double rounds to `2^64`). */
export const MAX_UINT64 = 2 ** 64;

/** `key value` lines as numbers (the node stats' parser, as doubles); lines that do not parse are skipped. */
export function keyValues(text: string | undefined): Map<string, number> {
  return new Map([...parseKeyValues(text ?? '')].map(([key, value]) => [key, Number(value)]));
}

/** A file holding one unsigned number; "max" is 2^64-1 (cAdvisor's readUInt64); absent or garbage, undefined. */
export function singleNumber(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '') return undefined;
  if (trimmed === 'max') return MAX_UINT64;
  return /^\d+$/.test(trimmed) ? Number(trimmed) : undefined;
}

/** Usage less inactive file pages, never below 0 (cAdvisor's working set). */
function workingSet(usage: number, inactiveFile: number | undefined): number {
  if (inactiveFile === undefined) return usage;
  return usage > inactiveFile ? usage - inactiveFile : 0;
}

/**
 * v1 blkio file (`8:0 Read 4096` lines, a `Total` line at the end): per device and operation. The
 * device-less `Total` line is dropped, as runc does.
 */
export function parseBlkio(text: string | undefined): DeviceCount[] {
  const out: DeviceCount[] = [];
  for (const line of (text ?? '').split('\n')) {
    const match = /^(\d+):(\d+)\s+(\S+)\s+(\d+)$/.exec(line.trim());
    if (match === null) continue;
    out.push({ major: Number(match[1]), minor: Number(match[2]), op: match[3] ?? '', value: Number(match[4]) });
  }
  return out;
}

/** The blkio file runc reads: the I/O scheduler's recursive file, or the throttle one when that has no device lines. */
function blkioOf(files: CgroupFiles, name: string): DeviceCount[] {
  const scheduler = parseBlkio(files.get(`blkio.${name}_recursive`));
  return scheduler.length > 0 ? scheduler : parseBlkio(files.get(`blkio.throttle.${name}_recursive`));
}

/**
 * v2 `io.stat` (`8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0`) as runc converts it: bytes
 * and operations per device as `Read` and `Write` (discards are not reported).
 */
export function parseIoStat(text: string | undefined): IoFigures {
  const serviceBytes: DeviceCount[] = [];
  const serviced: DeviceCount[] = [];
  for (const line of (text ?? '').split('\n')) {
    const [device, ...pairs] = line.trim().split(/\s+/);
    const match = /^(\d+):(\d+)$/.exec(device ?? '');
    if (match === null) continue;
    const major = Number(match[1]);
    const minor = Number(match[2]);
    const values = new Map(pairs.map((p) => p.split('=') as [string, string]).map(([k, v]) => [k, Number(v)]));
    const add = (into: DeviceCount[], key: string, op: string): void => {
      const value = values.get(key);
      if (value !== undefined && Number.isFinite(value)) into.push({ major, minor, op, value });
    };
    add(serviceBytes, 'rbytes', 'Read');
    add(serviceBytes, 'wbytes', 'Write');
    add(serviced, 'rios', 'Read');
    add(serviced, 'wios', 'Write');
  }
  return { serviceBytes, serviced };
}

function v1Cpu(files: CgroupFiles): CpuFigures | undefined {
  const total = singleNumber(files.get('cpuacct.usage'));
  if (total === undefined) return undefined;
  const stat = files.has('cpuacct.stat') ? keyValues(files.get('cpuacct.stat')) : undefined;
  const cfs = files.has('cpu.stat') ? keyValues(files.get('cpu.stat')) : undefined;
  const ticks = (key: string): number | undefined => {
    const value = stat?.get(key);
    return value === undefined ? undefined : (value * 1e9) / USER_HZ;
  };
  return {
    totalNs: total,
    userNs: ticks('user'),
    systemNs: ticks('system'),
    periods: cfs?.get('nr_periods'),
    throttledPeriods: cfs?.get('nr_throttled'),
    throttledNs: cfs?.get('throttled_time'),
    burstPeriods: cfs?.get('nr_bursts'),
    burstNs: cfs?.get('burst_time'),
  };
}

function v1Memory(files: CgroupFiles): MemoryFigures | undefined {
  const usage = singleNumber(files.get('memory.usage_in_bytes'));
  if (usage === undefined) return undefined;
  const stat = keyValues(files.get('memory.stat'));
  // runc reads the hierarchical totals when the memcg is hierarchical (always, on current kernels).
  const hierarchical = singleNumber(files.get('memory.use_hierarchy')) === 1;
  const pick = (key: string): number | undefined => (hierarchical ? stat.get(`total_${key}`) : stat.get(key));
  const inactiveFile = stat.get('total_inactive_file');
  return {
    usage,
    maxUsage: singleNumber(files.get('memory.max_usage_in_bytes')),
    failcnt: singleNumber(files.get('memory.failcnt')),
    kernel: singleNumber(files.get('memory.kmem.usage_in_bytes')),
    cache: pick('cache'),
    rss: pick('rss'),
    swap: pick('swap'),
    mappedFile: pick('mapped_file'),
    workingSet: workingSet(usage, inactiveFile),
    activeFile: stat.get('total_active_file'),
    inactiveFile,
    pgfault: stat.get('pgfault'),
    pgmajfault: stat.get('pgmajfault'),
    fileDirty: pick('dirty'),
    fileWriteback: pick('writeback'),
    pgscan: undefined,
    pgsteal: undefined,
    refaultFile: stat.get('workingset_refault_file'),
    refaultAnon: stat.get('workingset_refault_anon'),
    eventsHigh: undefined,
    eventsMax: undefined,
    oomKills: keyValues(files.get('memory.oom_control')).get('oom_kill'),
  };
}

/** v1 spec: `cpu.shares`, CFS period and quota (-1: none), memory limits (present when the memory cgroup is). */
function v1Spec(files: CgroupFiles): SpecFigures {
  const quota = files.get('cpu.cfs_quota_us')?.trim();
  const hasMemory = files.has('memory.limit_in_bytes');
  return {
    hasCpu: files.has('cpu.shares'),
    cpuShares: singleNumber(files.get('cpu.shares')) ?? 0,
    cpuPeriodUs: singleNumber(files.get('cpu.cfs_period_us')) ?? 0,
    cpuQuotaUs: quota === undefined || quota === '-1' ? 0 : (singleNumber(quota) ?? 0),
    hasMemory,
    memoryLimit: singleNumber(files.get('memory.limit_in_bytes')) ?? 0,
    memorySwapLimit: singleNumber(files.get('memory.memsw.limit_in_bytes')) ?? 0,
    memoryReservation: singleNumber(files.get('memory.soft_limit_in_bytes')) ?? 0,
  };
}

/** `pids.max` as runc reads it: "max" is 0 (no limit). */
function pidsMax(text: string | undefined): number | undefined {
  if (text?.trim() === 'max') return 0;
  return singleNumber(text);
}

/** A cgroup v1 cgroup's figures from its files in every hierarchy (file names are unique across them). */
export function parseV1Cgroup(files: CgroupFiles): CgroupFigures {
  const serviceBytes = blkioOf(files, 'io_service_bytes');
  const serviced = blkioOf(files, 'io_serviced');
  const hasBlkio = [...files.keys()].some((name) => name.startsWith('blkio.'));
  return {
    cpu: v1Cpu(files),
    memory: v1Memory(files),
    io: hasBlkio ? { serviceBytes, serviced } : undefined,
    threads: singleNumber(files.get('pids.current')),
    threadsMax: pidsMax(files.get('pids.max')),
    spec: v1Spec(files),
  };
}

/** cAdvisor's cpu.weight → shares (`2 + (weight-1)*262142/9999`); 0 for a weight out of range. */
export function cpuWeightToLimit(weight: number): number {
  if (weight < 1 || weight > 10000) return 0;
  return 2 + Math.floor(((weight - 1) * 262142) / 9999);
}

function v2Cpu(files: CgroupFiles): CpuFigures | undefined {
  if (!files.has('cpu.stat')) return undefined;
  const stat = keyValues(files.get('cpu.stat'));
  const usec = (key: string): number | undefined => {
    const value = stat.get(key);
    return value === undefined ? undefined : value * 1000;
  };
  const total = usec('usage_usec');
  if (total === undefined) return undefined;
  return { totalNs: total, userNs: usec('user_usec'), systemNs: usec('system_usec'), periods: stat.get('nr_periods'), throttledPeriods: stat.get('nr_throttled'), throttledNs: usec('throttled_usec'), burstPeriods: stat.get('nr_bursts'), burstNs: usec('burst_usec') };
}

function v2Memory(files: CgroupFiles): MemoryFigures | undefined {
  const usage = singleNumber(files.get('memory.current'));
  if (usage === undefined) return undefined;
  const stat = keyValues(files.get('memory.stat'));
  const events = files.has('memory.events') ? keyValues(files.get('memory.events')) : undefined;
  const inactiveFile = stat.get('inactive_file');
  return {
    usage,
    maxUsage: singleNumber(files.get('memory.peak')),
    failcnt: events?.get('max'),
    // Kernels before 5.18 do not sum it up: slab and stacks are the bulk of it.
    kernel: stat.get('kernel') ?? (stat.has('slab') ? (stat.get('slab') ?? 0) + (stat.get('kernel_stack') ?? 0) : undefined),
    cache: stat.get('file'),
    rss: stat.get('anon'),
    swap: singleNumber(files.get('memory.swap.current')),
    mappedFile: stat.get('file_mapped'),
    workingSet: workingSet(usage, inactiveFile),
    activeFile: stat.get('active_file'),
    inactiveFile,
    pgfault: stat.get('pgfault'),
    pgmajfault: stat.get('pgmajfault'),
    fileDirty: stat.get('file_dirty'),
    fileWriteback: stat.get('file_writeback'),
    pgscan: stat.get('pgscan'),
    pgsteal: stat.get('pgsteal'),
    refaultFile: stat.get('workingset_refault_file'),
    refaultAnon: stat.get('workingset_refault_anon'),
    eventsHigh: events?.get('high'),
    eventsMax: events?.get('max'),
    oomKills: events?.get('oom_kill'),
  };
}

/** v2 spec: `cpu.weight` as shares, `cpu.max` (`max 100000`: no quota), `memory.max`, `memory.swap.max`, `memory.min`. */
function v2Spec(files: CgroupFiles): SpecFigures {
  const weight = singleNumber(files.get('cpu.weight'));
  const [quota, period] = (files.get('cpu.max') ?? '').trim().split(/\s+/);
  const hasMemory = files.has('memory.max');
  return {
    hasCpu: files.has('cpu.stat'),
    cpuShares: weight === undefined ? 0 : cpuWeightToLimit(weight),
    cpuPeriodUs: singleNumber(period) ?? 0,
    cpuQuotaUs: quota === undefined || quota === 'max' ? 0 : (singleNumber(quota) ?? 0),
    hasMemory,
    memoryLimit: singleNumber(files.get('memory.max')) ?? 0,
    memorySwapLimit: singleNumber(files.get('memory.swap.max')) ?? 0,
    memoryReservation: singleNumber(files.get('memory.min')) ?? 0,
  };
}

/** A cgroup v2 cgroup's figures from the files of its one directory. */
export function parseV2Cgroup(files: CgroupFiles): CgroupFigures {
  return {
    cpu: v2Cpu(files),
    memory: v2Memory(files),
    io: files.has('io.stat') ? parseIoStat(files.get('io.stat')) : undefined,
    threads: singleNumber(files.get('pids.current')),
    threadsMax: pidsMax(files.get('pids.max')),
    spec: v2Spec(files),
  };
}

/** One network interface's counters (`/proc/<pid>/net/dev`). */
export interface InterfaceFigures {
  readonly name: string;
  readonly rxBytes: number;
  readonly rxPackets: number;
  readonly rxErrors: number;
  readonly rxDropped: number;
  readonly txBytes: number;
  readonly txPackets: number;
  readonly txErrors: number;
  readonly txDropped: number;
}

/** Interfaces cAdvisor leaves out: loopback, the host ends of veth pairs, docker's and nerdctl's bridges. */
const IGNORED_INTERFACES = ['lo', 'veth', 'docker', 'nerdctl'];

/**
 * `/proc/<pid>/net/dev`: two header lines, then `name: 16 counters`. A line of another shape makes
 * the whole file untrusted (undefined), as cAdvisor treats it.
 */
export function parseNetDev(text: string): InterfaceFigures[] | undefined {
  const out: InterfaceFigures[] = [];
  for (const line of text.split('\n').slice(2)) {
    if (line.trim() === '') continue;
    const fields = line.replace(/:/g, ' ').trim().split(/\s+/);
    if (fields.length !== 17) return undefined;
    const [name = '', ...counters] = fields;
    const n = counters.map(Number);
    if (n.some((v) => !Number.isFinite(v))) return undefined;
    if (IGNORED_INTERFACES.some((prefix) => name.toLowerCase().startsWith(prefix))) continue;
    const at = (i: number): number => n[i] ?? 0;
    out.push({ name, rxBytes: at(0), rxPackets: at(1), rxErrors: at(2), rxDropped: at(3), txBytes: at(8), txPackets: at(9), txErrors: at(10), txDropped: at(11) });
  }
  return out;
}

/** `/proc/<pid>/limits`' "Max open files" soft limit (-1: unlimited), as cAdvisor reports ulimits. */
export function parseMaxOpenFiles(text: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const fields = line?.slice('Max open files'.length).trim().split(/\s+/);
  if (fields?.length !== 3) return undefined;
  const soft = fields[0] ?? '';
  if (soft.toLowerCase() === 'unlimited') return -1;
  return /^\d+$/.test(soft) ? Number(soft) : undefined;
}

/** `/proc/diskstats` (or `/sys/block`) names by `major:minor`, for the `device` label (`/dev/<name>`). */
export function parseDiskstatsNames(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [major, minor, name] = line.trim().split(/\s+/);
    if (major !== undefined && minor !== undefined && name !== undefined && /^\d+$/.test(major)) out.set(`${major}:${minor}`, `/dev/${name}`);
  }
  return out;
}

/** One block device's `/proc/diskstats` counters, as cAdvisor's root filesystems carry them. */
export interface DiskCounters {
  readonly readsCompleted: number;
  readonly readsMerged: number;
  readonly sectorsRead: number;
  readonly readTimeMs: number;
  readonly writesCompleted: number;
  readonly writesMerged: number;
  readonly sectorsWritten: number;
  readonly writeTimeMs: number;
  readonly ioInProgress: number;
  readonly ioTimeMs: number;
  readonly weightedIoTimeMs: number;
}

/** `/proc/diskstats` counters by device path (`/dev/vda`). */
export function parseDiskstats(text: string): Map<string, DiskCounters> {
  const out = new Map<string, DiskCounters>();
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 14) continue;
    const n = fields.slice(3, 14).map(Number);
    const at = (i: number): number => n[i] ?? 0;
    out.set(`/dev/${fields[2] ?? ''}`, {
      readsCompleted: at(0),
      readsMerged: at(1),
      sectorsRead: at(2),
      readTimeMs: at(3),
      writesCompleted: at(4),
      writesMerged: at(5),
      sectorsWritten: at(6),
      writeTimeMs: at(7),
      ioInProgress: at(8),
      ioTimeMs: at(9),
      weightedIoTimeMs: at(10),
    });
  }
  return out;
}
