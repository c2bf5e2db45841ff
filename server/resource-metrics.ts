/**
 * `/metrics/resource` in the Prometheus text format (0.0.4), as the kubelet's resource metrics
 * collector writes it: cumulative CPU in core-seconds and working set in bytes for the node, each
 * pod and each container, container start times, and the scrape error gauges; each sample carries
 * the time its figure was taken (milliseconds), which metrics-server uses to compute rates.
 * Families are sorted by name, as the Prometheus registry gathers them.
 */
import type { CpuStats, MemoryStats, Summary, SwapStats } from './summary.js';

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly samples: string[];
}

const FAMILIES: readonly Omit<Family, 'samples'>[] = [
  { name: 'container_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the container in core-seconds', type: 'counter' },
  { name: 'container_memory_working_set_bytes', help: '[STABLE] Current working set of the container in bytes', type: 'gauge' },
  { name: 'container_start_time_seconds', help: '[STABLE] Start time of the container since unix epoch in seconds', type: 'gauge' },
  { name: 'container_swap_limit_bytes', help: '[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems', type: 'gauge' },
  { name: 'container_swap_usage_bytes', help: '[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems', type: 'gauge' },
  { name: 'node_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the node in core-seconds', type: 'counter' },
  { name: 'node_memory_working_set_bytes', help: '[STABLE] Current working set of the node in bytes', type: 'gauge' },
  { name: 'node_swap_usage_bytes', help: '[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems', type: 'gauge' },
  { name: 'pod_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', type: 'counter' },
  { name: 'pod_memory_working_set_bytes', help: '[STABLE] Current working set of the pod in bytes', type: 'gauge' },
  { name: 'pod_swap_usage_bytes', help: '[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems', type: 'gauge' },
  { name: 'resource_scrape_error', help: '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge' },
  { name: 'scrape_error', help: '[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge' },
];

/** A label value escaped as the text format requires (backslash, quote, newline). */
function escape(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: readonly (readonly [string, string])[]): string {
  return pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}`;
}

function millis(time: string): number {
  return Date.parse(time);
}

type Add = (family: string, pairs: readonly (readonly [string, string])[], value: number, time?: string) => void;

function addUsage(add: Add, prefix: 'node' | 'pod' | 'container', pairs: readonly (readonly [string, string])[], usage: { cpu?: CpuStats | undefined; memory?: MemoryStats | undefined; swap?: SwapStats | undefined }): void {
  const { cpu, memory, swap } = usage;
  if (cpu?.usageCoreNanoSeconds !== undefined) add(`${prefix}_cpu_usage_seconds_total`, pairs, cpu.usageCoreNanoSeconds / 1e9, cpu.time);
  if (memory?.workingSetBytes !== undefined) add(`${prefix}_memory_working_set_bytes`, pairs, memory.workingSetBytes, memory.time);
  if (swap?.swapUsageBytes !== undefined) add(`${prefix}_swap_usage_bytes`, pairs, swap.swapUsageBytes, swap.time);
  // The kubelet's container limit: what is still available plus what is used.
  if (prefix === 'container' && swap?.swapAvailableBytes !== undefined) add('container_swap_limit_bytes', pairs, swap.swapAvailableBytes + (swap.swapUsageBytes ?? 0), swap.time);
}

/** The exposition of `summary`; `failed` (the runtime could not be asked) gives only the error gauges at 1. */
export function resourceMetrics(summary: Summary | undefined): string {
  const samples = new Map<string, string[]>(FAMILIES.map((f) => [f.name, []]));
  const add: Add = (family, pairs, value, time) => {
    samples.get(family)?.push(`${family}${labels(pairs)} ${String(value)}${time === undefined ? '' : ` ${String(millis(time))}`}`);
  };
  if (summary !== undefined) {
    addUsage(add, 'node', [], summary.node);
    for (const pod of summary.pods) {
      const podLabels = [['namespace', pod.podRef.namespace], ['pod', pod.podRef.name]] as const;
      addUsage(add, 'pod', podLabels, pod);
      for (const c of pod.containers) {
        const containerLabels = [['container', c.name], ...podLabels] as const;
        addUsage(add, 'container', containerLabels, c);
        add('container_start_time_seconds', containerLabels, millis(c.startTime) / 1000, c.startTime);
      }
    }
  }
  const error = summary === undefined ? 1 : 0;
  add('resource_scrape_error', [], error);
  add('scrape_error', [], error);
  return FAMILIES.flatMap((f) => {
    const lines = samples.get(f.name) ?? [];
    return lines.length === 0 ? [] : [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...lines];
  })
    .map((line) => `${line}\n`)
    .join('');
}
