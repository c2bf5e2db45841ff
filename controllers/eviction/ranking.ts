/**
 * Which pod to evict and what its status says, as the kubelet's rank functions and
 * `evictionMessage`: for memory, pods whose usage exceeds their requests first, then lower
 * priority, then usage above requests; for disk, the same over local storage (container writable
 * layers and logs, emptyDir volumes on disk); for PIDs, lower priority, then more processes. Pure:
 * pods with their usage in, an ordered list and messages out.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { amountOf } from '../../reconcilers/admission/pod-requests.js';
import { SIGNAL_RESOURCE, type Observation } from './signals.js';
import { thresholdQuantity, type Signal, type Threshold } from './thresholds.js';

/** One container's usage (bytes; undefined when the runtime did not say). */
export interface ContainerUsage {
  readonly name: string;
  readonly memoryWorkingSetBytes?: number;
  /** Writable layer plus logs. */
  readonly diskBytes?: number;
}

/** A pod and what it uses. */
export interface PodUsage {
  readonly pod: V1Pod;
  readonly containers: readonly ContainerUsage[];
  /** emptyDir volumes on disk (not `medium: Memory`), bytes. */
  readonly volumeBytes: number;
  /** Processes of the pod, when known. */
  readonly processes?: number;
}

function containerRequest(pod: V1Pod, name: string, resource: string): number {
  const container = pod.spec?.containers.find((c) => c.name === name);
  const request = container?.resources?.requests?.[resource];
  return request === undefined ? 0 : amountOf(resource, request);
}

function podRequest(pod: V1Pod, resource: string): number {
  return (pod.spec?.containers ?? []).reduce((sum, c) => sum + containerRequest(pod, c.name, resource), 0);
}

function memoryUsage(usage: PodUsage): number {
  return usage.containers.reduce((sum, c) => sum + (c.memoryWorkingSetBytes ?? 0), 0);
}

function diskUsage(usage: PodUsage): number {
  return usage.containers.reduce((sum, c) => sum + (c.diskBytes ?? 0), 0) + usage.volumeBytes;
}

function priorityOf(pod: V1Pod): number {
  return pod.spec?.priority ?? 0;
}

type Compare = (a: PodUsage, b: PodUsage) => number;

/** The kubelet's `orderedBy`: the first comparison that is not a tie decides. */
function orderedBy(...compares: readonly Compare[]): Compare {
  return (a, b) => {
    for (const compare of compares) {
      const result = compare(a, b);
      if (result !== 0) return result;
    }
    return 0;
  };
}

/** Pods over their requests first (the kubelet's exceedMemoryRequests / exceedDiskRequests). */
function exceedsRequests(usageOf: (u: PodUsage) => number, resource: string): Compare {
  const exceeds = (u: PodUsage): number => (usageOf(u) > podRequest(u.pod, resource) ? 1 : 0);
  return (a, b) => exceeds(b) - exceeds(a);
}

/** Lower priority first. */
const byPriority: Compare = (a, b) => priorityOf(a.pod) - priorityOf(b.pod);

/** More usage above requests first. */
function aboveRequests(usageOf: (u: PodUsage) => number, resource: string): Compare {
  const above = (u: PodUsage): number => usageOf(u) - podRequest(u.pod, resource);
  return (a, b) => above(b) - above(a);
}

/** Pods in the order the kubelet evicts them for a signal (first = next victim). */
export function rankForEviction(signal: Signal, pods: readonly PodUsage[]): PodUsage[] {
  const resource = SIGNAL_RESOURCE[signal];
  if (resource === 'memory') return [...pods].sort(orderedBy(exceedsRequests(memoryUsage, 'memory'), byPriority, aboveRequests(memoryUsage, 'memory')));
  if (resource === 'pids') return [...pods].sort(orderedBy(byPriority, (a, b) => (b.processes ?? 0) - (a.processes ?? 0)));
  return [...pods].sort(orderedBy(exceedsRequests(diskUsage, 'ephemeral-storage'), byPriority, aboveRequests(diskUsage, 'ephemeral-storage')));
}

const BINARY_SUFFIXES: readonly (readonly [string, number])[] = [
  ['Ei', 2 ** 60],
  ['Pi', 2 ** 50],
  ['Ti', 2 ** 40],
  ['Gi', 2 ** 30],
  ['Mi', 2 ** 20],
  ['Ki', 2 ** 10],
];

/** A byte count as a binary-SI quantity prints (`300Mi`, `307201Ki`, `1000`), as in the kubelet's messages. */
export function formatBinaryQuantity(bytes: number): string {
  const value = Math.round(bytes);
  if (value === 0) return '0';
  for (const [suffix, size] of BINARY_SUFFIXES) if (value % size === 0) return `${value / size}${suffix}`;
  return String(value);
}

/** Threshold quantity and available amount, as the kubelet prints them (a quantity threshold as configured). */
function thresholdFigures(threshold: Threshold, observation: Observation): { quantity: string; available: string } {
  const { value } = threshold;
  // A binary quantity prints canonically (`1024Mi` as `1Gi`), as Go's Quantity.String(); others as written.
  const quantity = !('quantity' in value) ? formatBinaryQuantity(thresholdQuantity(value, observation.capacity)) : /^\d+(Ki|Mi|Gi|Ti|Pi|Ei)$/.test(value.text) ? formatBinaryQuantity(value.quantity) : value.text;
  return { quantity, available: formatBinaryQuantity(observation.available) };
}

/**
 * The status message of an evicted pod, in the kubelet's words: the resource, the threshold and
 * what was available, then each container using more than it requested.
 */
export function evictionMessage(threshold: Threshold, observation: Observation | undefined, usage: PodUsage): string {
  const resource = SIGNAL_RESOURCE[threshold.signal];
  let message = `The node was low on resource: ${resource}. `;
  if (observation !== undefined) {
    const figures = thresholdFigures(threshold, observation);
    message += `Threshold quantity: ${figures.quantity}, available: ${figures.available}. `;
  }
  for (const c of usage.containers) {
    const used = resource === 'memory' ? c.memoryWorkingSetBytes : resource === 'ephemeral-storage' ? c.diskBytes : undefined;
    if (used === undefined) continue;
    const request = containerRequest(usage.pod, c.name, resource);
    if (used > request) message += `Container ${c.name} was using ${formatBinaryQuantity(used)}, request is ${formatBinaryQuantity(request)}, has larger consumption of ${resource}. `;
  }
  return message;
}
