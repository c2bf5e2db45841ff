/**
 * The agent process's own cost on `/metrics`, as every Kubernetes component exposes it (the
 * Prometheus client's process collector: `process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `process_start_time_seconds`, `process_open_fds`,
 * `process_max_fds`, `process_virtual_memory_bytes`, `process_virtual_memory_max_bytes`, and the
 * network namespace's `process_network_receive_bytes_total` / `…_transmit_bytes_total`, which the
 * Go collector reads from /proc/self/net/dev as well), and the V8 heap where a Go component has its `go_memstats_*`, under the
 * names of the Node.js Prometheus client (`nodejs_heap_size_used_bytes`,
 * `nodejs_heap_size_total_bytes`, `nodejs_external_memory_bytes`). Read at each scrape, so an
 * operator sees the agent's CPU and memory beside the pods it runs, and how much of its resident
 * set is JavaScript heap.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { Counter, Gauge, MetricsRegistry } from '../util/metrics.js';

/** What the process readings come from (a seam: tests pass fixed values). */
export interface ProcessReadings {
  /** User + system CPU seconds since the process started. */
  cpuSeconds(): number;
  memory(): { readonly rss: number; readonly heapUsed: number; readonly heapTotal: number; readonly external: number };
  /** Seconds since the epoch when the process started. */
  startTimeSeconds(): number;
  /** Open file descriptors; undefined where /proc is not there. */
  openFds(): Promise<number | undefined>;
  /** The soft limit on open file descriptors; undefined when unknown or unlimited. */
  maxFds(): Promise<number | undefined>;
  /** Virtual memory size and its soft limit in bytes; undefined where /proc is not there. */
  virtualMemory?(): Promise<{ readonly bytes: number; readonly maxBytes: number | undefined } | undefined>;
  /** Bytes received and sent over every interface of the process's network namespace; undefined where /proc is not there. */
  network?(): Promise<{ readonly receiveBytes: number; readonly transmitBytes: number } | undefined>;
}

/** The Go client's value for an unlimited address space (the largest uint64, as a float). */
const UNLIMITED_BYTES = 2 ** 64;

/** The virtual memory size (field 23, `vsize`) of a /proc/<pid>/stat text. */
export function parseVsize(stat: string): number | undefined {
  // The command name (field 2) is parenthesized and may hold spaces: count fields after its last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const vsize = rest[20];
  return vsize === undefined || !/^\d+$/.test(vsize) ? undefined : Number(vsize);
}

/** The soft "Max address space" of a /proc/<pid>/limits text (the largest uint64 when unlimited). */
export function parseMaxAddressSpace(limits: string): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max address space'));
  const soft = line?.slice('Max address space'.length).trim().split(/\s+/)[0];
  if (soft === 'unlimited') return UNLIMITED_BYTES;
  return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
}

/** Receive and transmit bytes summed over every interface of a /proc/<pid>/net/dev text. */
export function parseNetDev(text: string): { receiveBytes: number; transmitBytes: number } {
  let receiveBytes = 0;
  let transmitBytes = 0;
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const fields = line.slice(colon + 1).trim().split(/\s+/).map(Number);
    receiveBytes += fields[0] ?? 0;
    transmitBytes += fields[8] ?? 0;
  }
  return { receiveBytes, transmitBytes };
}

/** The soft "Max open files" of a /proc/<pid>/limits text (+Inf when unlimited). */
export function parseMaxOpenFiles(limits: string): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === 'unlimited') return Number.POSITIVE_INFINITY;
  return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
}

/** This process, through `process` and /proc/self. */
export const thisProcess: ProcessReadings = {
  cpuSeconds: () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  },
  memory: () => process.memoryUsage(),
  startTimeSeconds: () => (Date.now() - process.uptime() * 1000) / 1000,
  openFds: () => readdir('/proc/self/fd').then((fds) => fds.length, () => undefined),
  maxFds: () => readFile('/proc/self/limits', 'utf8').then(parseMaxOpenFiles, () => undefined),
  virtualMemory: async () => {
    const [stat, limits] = await Promise.all([readFile('/proc/self/stat', 'utf8').catch(() => undefined), readFile('/proc/self/limits', 'utf8').catch(() => undefined)]);
    const bytes = stat === undefined ? undefined : parseVsize(stat);
    return bytes === undefined ? undefined : { bytes, maxBytes: limits === undefined ? undefined : parseMaxAddressSpace(limits) };
  },
  network: () => readFile('/proc/self/net/dev', 'utf8').then(parseNetDev, () => undefined),
};

/** `process_start_time_seconds` alone (component-base's RegisterProcessStartTime, as on `/metrics/probes`). */
export function registerProcessStartTime(registry: MetricsRegistry, readings: Pick<ProcessReadings, 'startTimeSeconds'> = thisProcess): void {
  registry.gauge({ name: 'process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.' }).set({}, readings.startTimeSeconds());
}

/** Registers the process families on `registry`, refreshed by a collector before each scrape. */
export function registerProcessMetrics(registry: MetricsRegistry, readings: ProcessReadings = thisProcess): void {
  const cpu = registry.counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.' });
  const rss = registry.gauge({ name: 'process_resident_memory_bytes', help: 'Resident memory size in bytes.' });
  const heapUsed = registry.gauge({ name: 'nodejs_heap_size_used_bytes', help: 'Process heap size used from Node.js in bytes.' });
  const heapTotal = registry.gauge({ name: 'nodejs_heap_size_total_bytes', help: 'Process heap size from Node.js in bytes.' });
  const external = registry.gauge({ name: 'nodejs_external_memory_bytes', help: 'Node.js external memory size in bytes.' });
  registerProcessStartTime(registry, readings);
  // The counter only grows by what was used since the last scrape.
  let cpuCounted = 0;
  let openFds: Gauge | undefined;
  let maxFds: Gauge | undefined;
  registry.collect(async () => {
    const seconds = readings.cpuSeconds();
    if (seconds > cpuCounted) cpu.inc({}, seconds - cpuCounted);
    cpuCounted = Math.max(cpuCounted, seconds);
    const memory = readings.memory();
    rss.set({}, memory.rss);
    heapUsed.set({}, memory.heapUsed);
    heapTotal.set({}, memory.heapTotal);
    external.set({}, memory.external);
    const [open, max] = await Promise.all([readings.openFds(), readings.maxFds()]);
    // Registered once known: a family without a value would show as 0.
    if (open !== undefined) (openFds ??= registry.gauge({ name: 'process_open_fds', help: 'Number of open file descriptors.' })).set({}, open);
    if (max !== undefined) (maxFds ??= registry.gauge({ name: 'process_max_fds', help: 'Maximum number of open file descriptors.' })).set({}, max);
    await memoryAndNetwork();
  });
  // Registered once known, as the fds; the network counters grow by what the namespace moved since the last scrape.
  let virtual: Gauge | undefined;
  let virtualMax: Gauge | undefined;
  let network: { readonly receive: Counter; readonly transmit: Counter; counted: { receiveBytes: number; transmitBytes: number } } | undefined;
  const memoryAndNetwork = async (): Promise<void> => {
    const [memory, net] = await Promise.all([readings.virtualMemory?.(), readings.network?.()]);
    if (memory !== undefined) (virtual ??= registry.gauge({ name: 'process_virtual_memory_bytes', help: 'Virtual memory size in bytes.' })).set({}, memory.bytes);
    if (memory?.maxBytes !== undefined) (virtualMax ??= registry.gauge({ name: 'process_virtual_memory_max_bytes', help: 'Maximum amount of virtual memory available in bytes.' })).set({}, memory.maxBytes);
    if (net === undefined) return;
    network ??= {
      receive: registry.counter({ name: 'process_network_receive_bytes_total', help: 'Number of bytes received by the process over the network.' }),
      transmit: registry.counter({ name: 'process_network_transmit_bytes_total', help: 'Number of bytes sent by the process over the network.' }),
      counted: { receiveBytes: 0, transmitBytes: 0 },
    };
    network.receive.inc({}, Math.max(0, net.receiveBytes - network.counted.receiveBytes));
    network.transmit.inc({}, Math.max(0, net.transmitBytes - network.counted.transmitBytes));
    network.counted = { receiveBytes: Math.max(net.receiveBytes, network.counted.receiveBytes), transmitBytes: Math.max(net.transmitBytes, network.counted.transmitBytes) };
  };
}
