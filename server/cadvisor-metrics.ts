/**
 * `/metrics/cadvisor` in the Prometheus text format, built from plain figures (the collector,
 * cadvisor-collector.ts, reads them). Pure. The families, help texts, types and label sets are
 * those of the kubelet v1.37.2's cAdvisor collectors (cadvisor lib v0.60.5, `metrics/prometheus.go`
 * and `prometheus_machine.go`) with the kubelet's metric set (CPU, memory, disk usage and I/O,
 * network, processes, OOM; no per-CPU usage):
 *
 * - every container series has `container`, `id`, `image`, `name`, `namespace`, `pod`, plus the
 *   family's own (`cpu`, `device`, `interface`, `failure_type`/`scope`, `ulimit`, …); label names
 *   sorted, series sorted by label values, families by name, as the Go registry gathers them;
 * - the usage series carry the time their cgroup was read (ms), the spec series none;
 * - numbers are written as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes them.
 *
 * A figure nodelet could not read is left out, never written as 0 (docs/node-server.md lists where
 * that differs from the kubelet).
 */
import type { CgroupFigures, DiskCounters, InterfaceFigures } from './cgroup-stats.js';
import type { MachineInfo, VersionInfo } from './machine-info.js';

/** The kubelet's base labels of a cAdvisor container. */
export interface ContainerLabels {
  /** The Kubernetes container name (`POD`-less: a sandbox has ""). */
  readonly container: string;
  /** The cgroup path (`/`, `/kubepods/burstable/pod<uid>/<id>`). */
  readonly id: string;
  readonly image: string;
  /** The runtime's container ID (cAdvisor's first alias); "" for a plain cgroup. */
  readonly name: string;
  readonly namespace: string;
  readonly pod: string;
}

/** One filesystem a container uses, as cAdvisor's `FsStats`. */
export interface FilesystemFigures {
  readonly device: string;
  readonly limitBytes: number;
  readonly usageBytes: number;
  readonly inodes: number | undefined;
  readonly inodesFree: number | undefined;
  /** The block device's counters (`/proc/diskstats`); the root container's filesystems only. */
  readonly disk?: DiskCounters;
}

/** One container (a cgroup) and everything read about it. */
export interface ContainerSample {
  readonly labels: ContainerLabels;
  readonly figures: CgroupFigures;
  /** When its files were read (ms since the epoch): the usage series' timestamp. */
  readonly readAtMs: number;
  readonly creationTimeSeconds: number;
  readonly startTimeSeconds: number;
  /** `cgroup.procs` count, descriptors and sockets of those processes. */
  readonly processes?: { readonly count: number; readonly fds: number; readonly sockets: number; readonly maxOpenFiles: number | undefined };
  /** The network namespace's interfaces: the root's and each pod sandbox's only. */
  readonly interfaces?: readonly InterfaceFigures[];
  readonly filesystems?: readonly FilesystemFigures[];
  /** Block device names by `major:minor` (`/dev/vda`), for the blkio series. */
  readonly deviceNames?: ReadonlyMap<string, string>;
}

/** Everything one scrape writes. */
export interface CadvisorScrape {
  readonly nowMs: number;
  readonly version: VersionInfo | undefined;
  readonly machine: MachineInfo | undefined;
  readonly containers: readonly ContainerSample[];
  /** The containers could not all be listed or read in time (cAdvisor's `container_scrape_error`). */
  readonly containerError: boolean;
}

type Kind = 'counter' | 'gauge';
type Pairs = Readonly<Record<string, string>>;

interface Sample {
  readonly extra: Pairs;
  readonly value: number;
  /** Omitted for spec series. */
  readonly stamped: boolean;
}

/** A container family: its declaration and how its samples come out of a container. */
interface ContainerFamily {
  readonly name: string;
  readonly help: string;
  readonly kind: Kind;
  readonly samples: (c: ContainerSample) => readonly Sample[];
}

/** Go's `strconv.FormatFloat(v, 'g', -1, 64)`: shortest digits; an exponent (`e+06`) from 1e6 up and below 1e-4. */
export function goFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const [mantissa = '0', exponentText = '0'] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 6) return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return String(value);
}

const ns = (v: number): number => v / 1e9;
const one = (value: number | undefined, extra: Pairs = {}): Sample[] => (value === undefined ? [] : [{ extra, value, stamped: true }]);
const spec = (value: number): Sample[] => [{ extra: {}, value, stamped: false }];

/** cAdvisor's specMemoryValue: above 2^62 is "unlimited", written 0. */
function specMemory(value: number): number {
  return value > 2 ** 62 ? 0 : value;
}

function cpuFamilies(): ContainerFamily[] {
  const cpu = (pick: (c: NonNullable<CgroupFigures['cpu']>) => number | undefined, scale = (v: number): number => v) => (c: ContainerSample): Sample[] => {
    const value = c.figures.cpu === undefined ? undefined : pick(c.figures.cpu);
    return one(value === undefined ? undefined : scale(value));
  };
  // CFS counters only for a cgroup with a quota, as cAdvisor's condition.
  const cfs = (pick: (c: NonNullable<CgroupFigures['cpu']>) => number | undefined, scale?: (v: number) => number) => (c: ContainerSample): Sample[] => (c.figures.spec.cpuQuotaUs === 0 ? [] : cpu(pick, scale)(c));
  return [
    { name: 'container_cpu_user_seconds_total', help: 'Cumulative user cpu time consumed in seconds.', kind: 'counter', samples: cpu((x) => x.userNs, ns) },
    { name: 'container_cpu_system_seconds_total', help: 'Cumulative system cpu time consumed in seconds.', kind: 'counter', samples: cpu((x) => x.systemNs, ns) },
    // Without per-CPU usage, the total, and only once there is some (cAdvisor's getValues).
    { name: 'container_cpu_usage_seconds_total', help: 'Cumulative cpu time consumed in seconds.', kind: 'counter', samples: (c) => (c.figures.cpu !== undefined && c.figures.cpu.totalNs > 0 ? one(ns(c.figures.cpu.totalNs), { cpu: 'total' }) : []) },
    { name: 'container_cpu_cfs_periods_total', help: 'Number of elapsed enforcement period intervals.', kind: 'counter', samples: cfs((x) => x.periods) },
    { name: 'container_cpu_cfs_throttled_periods_total', help: 'Number of throttled period intervals.', kind: 'counter', samples: cfs((x) => x.throttledPeriods) },
    { name: 'container_cpu_cfs_throttled_seconds_total', help: 'Total time duration the container has been throttled.', kind: 'counter', samples: cfs((x) => x.throttledNs, ns) },
    { name: 'container_cpu_cfs_burst_periods_total', help: 'Number of periods when burst occurs.', kind: 'counter', samples: cfs((x) => x.burstPeriods) },
    { name: 'container_cpu_cfs_burst_seconds_total', help: 'Total time duration the container has been bursted.', kind: 'counter', samples: cfs((x) => x.burstNs, ns) },
  ];
}

type Memory = NonNullable<CgroupFigures['memory']>;

function memoryFamilies(): ContainerFamily[] {
  const mem = (pick: (m: Memory) => number | undefined) => (c: ContainerSample): Sample[] => one(c.figures.memory === undefined ? undefined : pick(c.figures.memory));
  const failures = (c: ContainerSample): Sample[] => {
    const m = c.figures.memory;
    if (m === undefined) return [];
    // cAdvisor reports the cgroup's own fault counts under both scopes.
    return (['container', 'hierarchy'] as const).flatMap((scope) => [...one(m.pgfault, { failure_type: 'pgfault', scope }), ...one(m.pgmajfault, { failure_type: 'pgmajfault', scope })]);
  };
  const gauge = (name: string, help: string, pick: (m: Memory) => number | undefined): ContainerFamily => ({ name, help, kind: 'gauge', samples: mem(pick) });
  const counter = (name: string, help: string, pick: (m: Memory) => number | undefined): ContainerFamily => ({ name, help, kind: 'counter', samples: mem(pick) });
  return [
    gauge('container_memory_cache', 'Number of bytes of page cache memory.', (m) => m.cache),
    gauge('container_memory_rss', 'Size of RSS in bytes.', (m) => m.rss),
    gauge('container_memory_kernel_usage', 'Size of kernel memory allocated in bytes.', (m) => m.kernel),
    gauge('container_memory_mapped_file', 'Size of memory mapped files in bytes.', (m) => m.mappedFile),
    gauge('container_memory_swap', 'Container swap usage in bytes.', (m) => m.swap),
    counter('container_memory_failcnt', 'Number of memory usage hits limits', (m) => m.failcnt),
    gauge('container_memory_usage_bytes', 'Current memory usage in bytes, including all memory regardless of when it was accessed', (m) => m.usage),
    gauge('container_memory_max_usage_bytes', 'Maximum memory usage recorded in bytes', (m) => m.maxUsage),
    gauge('container_memory_working_set_bytes', 'Current working set in bytes.', (m) => m.workingSet),
    gauge('container_memory_total_active_file_bytes', 'Current total active file in bytes.', (m) => m.activeFile),
    gauge('container_memory_total_inactive_file_bytes', 'Current total inactive file in bytes.', (m) => m.inactiveFile),
    { name: 'container_memory_failures_total', help: 'Cumulative count of memory allocation failures.', kind: 'counter', samples: failures },
    counter('container_memory_events_high_total', 'Cumulative count of memory.high throttle events for the container', (m) => m.eventsHigh),
    counter('container_memory_events_max_total', 'Cumulative count of memory.max limit hit events for the container', (m) => m.eventsMax),
    gauge('container_memory_file_dirty_bytes', 'Number of bytes of file cache that has been modified but not yet written back to disk.', (m) => m.fileDirty),
    gauge('container_memory_file_writeback_bytes', 'Number of bytes of file cache that is currently being written back to disk.', (m) => m.fileWriteback),
    counter('container_memory_pgscan_total', 'Cumulative number of pages scanned by the page reclaim algorithm.', (m) => m.pgscan),
    counter('container_memory_pgsteal_total', 'Cumulative number of pages reclaimed by the page reclaim algorithm.', (m) => m.pgsteal),
    counter('container_memory_workingset_refault_file_total', 'Cumulative number of refaults of previously evicted file pages.', (m) => m.refaultFile),
    counter('container_memory_workingset_refault_anon_total', 'Cumulative number of refaults of previously evicted anonymous pages.', (m) => m.refaultAnon),
    counter('container_oom_events_total', 'Count of out of memory events observed for the container', (m) => m.oomKills),
  ];
}

/** Per-filesystem samples (`device` label). */
function perFs(pick: (fs: FilesystemFigures) => number | undefined) {
  return (c: ContainerSample): Sample[] => (c.filesystems ?? []).flatMap((fs) => one(pick(fs), { device: fs.device }));
}

/** Per-device blkio samples of one operation, then the filesystems' disk counters (cAdvisor's ioValues). */
function perIo(source: 'serviceBytes' | 'serviced' | undefined, op: string, disk: ((d: DiskCounters) => number) | undefined) {
  return (c: ContainerSample): Sample[] => {
    const io = c.figures.io;
    const fromCgroup = source === undefined || io === undefined ? [] : io[source].filter((d) => d.op === op).map((d) => ({ extra: { device: c.deviceNames?.get(`${String(d.major)}:${String(d.minor)}`) ?? '' }, value: d.value, stamped: true }));
    const fromFs = disk === undefined ? [] : (c.filesystems ?? []).flatMap((fs) => (fs.disk === undefined ? [] : one(disk(fs.disk), { device: fs.device })));
    return [...fromCgroup, ...fromFs];
  };
}

const ms = (v: number): number => v / 1000;

function fsFamilies(): ContainerFamily[] {
  const counter = (name: string, help: string, samples: ContainerFamily['samples']): ContainerFamily => ({ name, help, kind: 'counter', samples });
  return [
    { name: 'container_fs_inodes_free', help: 'Number of available Inodes', kind: 'gauge', samples: perFs((fs) => fs.inodesFree) },
    { name: 'container_fs_inodes_total', help: 'Number of Inodes', kind: 'gauge', samples: perFs((fs) => fs.inodes) },
    { name: 'container_fs_limit_bytes', help: 'Number of bytes that can be consumed by the container on this filesystem.', kind: 'gauge', samples: perFs((fs) => fs.limitBytes) },
    { name: 'container_fs_usage_bytes', help: 'Number of bytes that are consumed by the container on this filesystem.', kind: 'gauge', samples: perFs((fs) => fs.usageBytes) },
    counter('container_fs_reads_bytes_total', 'Cumulative count of bytes read', perIo('serviceBytes', 'Read', undefined)),
    counter('container_fs_reads_total', 'Cumulative count of reads completed', perIo('serviced', 'Read', (d) => d.readsCompleted)),
    counter('container_fs_sector_reads_total', 'Cumulative count of sector reads completed', perIo(undefined, 'Read', (d) => d.sectorsRead)),
    counter('container_fs_reads_merged_total', 'Cumulative count of reads merged', perIo(undefined, 'Read', (d) => d.readsMerged)),
    counter('container_fs_read_seconds_total', 'Cumulative count of seconds spent reading', perIo(undefined, 'Read', (d) => ms(d.readTimeMs))),
    counter('container_fs_writes_bytes_total', 'Cumulative count of bytes written', perIo('serviceBytes', 'Write', undefined)),
    counter('container_fs_writes_total', 'Cumulative count of writes completed', perIo('serviced', 'Write', (d) => d.writesCompleted)),
    counter('container_fs_sector_writes_total', 'Cumulative count of sector writes completed', perIo(undefined, 'Write', (d) => d.sectorsWritten)),
    counter('container_fs_writes_merged_total', 'Cumulative count of writes merged', perIo(undefined, 'Write', (d) => d.writesMerged)),
    counter('container_fs_write_seconds_total', 'Cumulative count of seconds spent writing', perIo(undefined, 'Write', (d) => ms(d.writeTimeMs))),
    { name: 'container_fs_io_current', help: 'Number of I/Os currently in progress', kind: 'gauge', samples: perIo(undefined, 'Total', (d) => d.ioInProgress) },
    counter('container_fs_io_time_seconds_total', 'Cumulative count of seconds spent doing I/Os', perIo(undefined, 'Total', (d) => ms(d.ioTimeMs))),
    counter('container_fs_io_time_weighted_seconds_total', 'Cumulative weighted I/O time in seconds', perIo(undefined, 'Total', (d) => ms(d.weightedIoTimeMs))),
    counter('container_blkio_device_usage_total', 'Blkio Device bytes usage', (c) =>
      (c.figures.io?.serviceBytes ?? []).map((d) => ({ extra: { device: c.deviceNames?.get(`${String(d.major)}:${String(d.minor)}`) ?? '', major: String(d.major), minor: String(d.minor), operation: d.op }, value: d.value, stamped: true })),
    ),
  ];
}

function networkFamilies(): ContainerFamily[] {
  const net = (name: string, help: string, pick: (i: InterfaceFigures) => number): ContainerFamily => ({
    name,
    help,
    kind: 'counter',
    samples: (c) => (c.interfaces ?? []).flatMap((i) => one(pick(i), { interface: i.name })),
  });
  return [
    net('container_network_receive_bytes_total', 'Cumulative count of bytes received', (i) => i.rxBytes),
    net('container_network_receive_packets_total', 'Cumulative count of packets received', (i) => i.rxPackets),
    net('container_network_receive_packets_dropped_total', 'Cumulative count of packets dropped while receiving', (i) => i.rxDropped),
    net('container_network_receive_errors_total', 'Cumulative count of errors encountered while receiving', (i) => i.rxErrors),
    net('container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', (i) => i.txBytes),
    net('container_network_transmit_packets_total', 'Cumulative count of packets transmitted', (i) => i.txPackets),
    net('container_network_transmit_packets_dropped_total', 'Cumulative count of packets dropped while transmitting', (i) => i.txDropped),
    net('container_network_transmit_errors_total', 'Cumulative count of errors encountered while transmitting', (i) => i.txErrors),
  ];
}

function processFamilies(): ContainerFamily[] {
  const gauge = (name: string, help: string, samples: ContainerFamily['samples']): ContainerFamily => ({ name, help, kind: 'gauge', samples });
  return [
    gauge('container_processes', 'Number of processes running inside the container.', (c) => one(c.processes?.count)),
    gauge('container_file_descriptors', 'Number of open file descriptors for the container.', (c) => one(c.processes?.fds)),
    gauge('container_sockets', 'Number of open sockets for the container.', (c) => one(c.processes?.sockets)),
    gauge('container_threads_max', 'Maximum number of threads allowed inside the container, infinity if value is zero', (c) => one(c.figures.threadsMax)),
    gauge('container_threads', 'Number of threads running inside the container', (c) => one(c.figures.threads)),
    gauge('container_ulimits_soft', 'Soft ulimit values for the container root process. Unlimited if -1, except priority and nice', (c) => one(c.processes?.maxOpenFiles, { ulimit: 'max_open_files' })),
  ];
}

function specFamilies(nowMs: number): ContainerFamily[] {
  const gauge = (name: string, help: string, samples: ContainerFamily['samples']): ContainerFamily => ({ name, help, kind: 'gauge', samples });
  const cpu = (pick: (s: CgroupFigures['spec']) => number | undefined) => (c: ContainerSample): Sample[] => {
    const value = c.figures.spec.hasCpu ? pick(c.figures.spec) : undefined;
    return value === undefined ? [] : spec(value);
  };
  const memory = (pick: (s: CgroupFigures['spec']) => number) => (c: ContainerSample): Sample[] => (c.figures.spec.hasMemory ? spec(specMemory(pick(c.figures.spec))) : []);
  return [
    gauge('container_last_seen', 'Last time a container was seen by the exporter', () => [{ extra: {}, value: Math.floor(nowMs / 1000), stamped: true }]),
    // CRI containers have no health check: cAdvisor's "none defined".
    gauge('container_health_state', "The result of the container's health check", () => one(-1)),
    gauge('container_creation_time_seconds', 'Container creation time since unix epoch in seconds.', (c) => spec(c.creationTimeSeconds)),
    gauge('container_start_time_seconds', 'Start time of the container since unix epoch in seconds.', (c) => spec(c.startTimeSeconds)),
    gauge('container_spec_cpu_period', 'CPU period of the container.', cpu((s) => s.cpuPeriodUs)),
    gauge('container_spec_cpu_quota', 'CPU quota of the container.', cpu((s) => (s.cpuQuotaUs === 0 ? undefined : s.cpuQuotaUs))),
    gauge('container_spec_cpu_shares', 'CPU share of the container.', cpu((s) => s.cpuShares)),
    gauge('container_spec_memory_limit_bytes', 'Memory limit for the container.', memory((s) => s.memoryLimit)),
    gauge('container_spec_memory_swap_limit_bytes', 'Memory swap limit for the container.', memory((s) => s.memorySwapLimit)),
    gauge('container_spec_memory_reservation_limit_bytes', 'Memory reservation limit for the container.', memory((s) => s.memoryReservation)),
  ];
}

/** Every container family, in no particular order (the exposition sorts). */
export function containerFamilies(nowMs: number): ContainerFamily[] {
  return [...specFamilies(nowMs), ...cpuFamilies(), ...memoryFamilies(), ...fsFamilies(), ...networkFamilies(), ...processFamilies()];
}

/** One family's text block. */
interface Block {
  readonly name: string;
  readonly help: string;
  readonly kind: Kind;
  readonly lines: { readonly pairs: readonly (readonly [string, string])[]; readonly text: string }[];
}

function escapeValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function line(name: string, labels: Pairs, value: number, timestampMs?: number): { pairs: (readonly [string, string])[]; text: string } {
  const pairs = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const labelText = pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${escapeValue(v)}"`).join(',')}}`;
  return { pairs, text: `${name}${labelText} ${goFloat(value)}${timestampMs === undefined ? '' : ` ${String(Math.round(timestampMs))}`}` };
}

function compareSeries(a: readonly (readonly [string, string])[], b: readonly (readonly [string, string])[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i]?.[1] ?? '', b[i]?.[1] ?? ''];
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

function containerBlocks(scrape: CadvisorScrape): Block[] {
  return containerFamilies(scrape.nowMs).map((family) => {
    const seen = new Set<string>();
    const lines = scrape.containers.flatMap((c) =>
      family.samples(c).flatMap((s) => {
        const l = line(family.name, { ...c.labels, ...s.extra }, s.value, s.stamped ? (family.name === 'container_last_seen' ? scrape.nowMs : c.readAtMs) : undefined);
        // One series per label set, as the Go registry insists (a device both in blkio and the root's filesystems).
        const key = JSON.stringify(l.pairs);
        if (seen.has(key)) return [];
        seen.add(key);
        return [l];
      }),
    );
    return { name: family.name, help: family.help, kind: family.kind, lines };
  });
}

function machineBlocks(machine: MachineInfo | undefined): Block[] {
  if (machine === undefined) return [];
  const labels = { boot_id: machine.bootId, machine_id: machine.machineId, system_uuid: machine.systemUuid };
  const gauge = (name: string, help: string, value: number): Block => ({ name, help, kind: 'gauge', lines: [line(name, labels, value)] });
  return [
    gauge('machine_cpu_physical_cores', 'Number of physical CPU cores.', machine.physicalCores),
    gauge('machine_cpu_cores', 'Number of logical CPU cores.', machine.cores),
    gauge('machine_cpu_sockets', 'Number of CPU sockets.', machine.sockets),
    gauge('machine_cpu_books', 'Number of CPU books.', machine.books),
    gauge('machine_cpu_drawers', 'Number of CPU drawers.', machine.drawers),
    gauge('machine_memory_bytes', 'Amount of memory installed on the machine.', machine.memoryBytes),
    gauge('machine_swap_bytes', 'Amount of swap memory available on the machine.', machine.swapBytes),
  ];
}

function otherBlocks(scrape: CadvisorScrape): Block[] {
  const blocks: Block[] = [
    { name: 'container_scrape_error', help: '1 if there was an error while getting container metrics, 0 otherwise', kind: 'gauge', lines: [line('container_scrape_error', {}, scrape.containerError ? 1 : 0)] },
    { name: 'machine_scrape_error', help: '1 if there was an error while getting machine metrics, 0 otherwise.', kind: 'gauge', lines: [line('machine_scrape_error', {}, scrape.machine === undefined ? 1 : 0)] },
  ];
  if (scrape.version !== undefined) {
    const { kernelVersion, osVersion } = scrape.version;
    // nodelet is not cAdvisor and runs no Docker: those labels are empty, as the kubelet's own are.
    const labels = { cadvisorRevision: '', cadvisorVersion: '', dockerVersion: '', kernelVersion, osVersion };
    blocks.push({ name: 'cadvisor_version_info', help: "A metric with a constant '1' value labeled by kernel version, OS version, docker version, cadvisor version & cadvisor revision.", kind: 'gauge', lines: [line('cadvisor_version_info', labels, 1)] });
  }
  return blocks;
}

/** The exposition of one scrape. */
export function cadvisorMetrics(scrape: CadvisorScrape): string {
  const blocks = [...containerBlocks(scrape), ...machineBlocks(scrape.machine), ...otherBlocks(scrape)].filter((b) => b.lines.length > 0);
  blocks.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return blocks
    .flatMap((b) => [`# HELP ${b.name} ${b.help}`, `# TYPE ${b.name} ${b.kind}`, ...[...b.lines].sort((x, y) => compareSeries(x.pairs, y.pairs)).map((l) => l.text)])
    .map((l) => `${l}\n`)
    .join('');
}
