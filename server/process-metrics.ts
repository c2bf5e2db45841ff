/**
 * The agent process's own cost on `/metrics`, as every Kubernetes component exposes it (the
 * Prometheus client's process collector: `process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `process_start_time_seconds`, `process_open_fds`,
 * `process_max_fds`), and the V8 heap where a Go component has its `go_memstats_*`, under the
 * names of the Node.js Prometheus client (`nodejs_heap_size_used_bytes`,
 * `nodejs_heap_size_total_bytes`, `nodejs_external_memory_bytes`). Read at each scrape, so an
 * operator sees the agent's CPU and memory beside the pods it runs, and how much of its resident
 * set is JavaScript heap.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { Gauge, MetricsRegistry } from '../util/metrics.js';

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
  });
}
