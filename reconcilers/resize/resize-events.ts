/**
 * The kubelet's resize events (pkg/kubelet/events, v1.36): reasons and messages. A message is a
 * prefix and a JSON summary of the pod's container resources, the generation and any error:
 * `Pod resize started: {"containers":[{"name":"c","resources":{...}}],"generation":2}`.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';

export const RESIZE_STARTED = 'ResizeStarted';
export const RESIZE_COMPLETED = 'ResizeCompleted';
export const RESIZE_DEFERRED = 'ResizeDeferred';
export const RESIZE_INFEASIBLE = 'ResizeInfeasible';
export const RESIZE_ERROR = 'ResizeError';

function sorted(list: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  if (list === undefined || Object.keys(list).length === 0) return undefined;
  return Object.fromEntries(Object.entries(list).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function allocation(c: V1Container): { name: string; resources: Record<string, Record<string, string>> } {
  const limits = sorted(c.resources?.limits);
  const requests = sorted(c.resources?.requests);
  return { name: c.name, resources: { ...(limits === undefined ? {} : { limits }), ...(requests === undefined ? {} : { requests }) } };
}

/** `<prefix>: <summary JSON>`, as the kubelet's podResizeMessage. */
export function resizeMessage(pod: V1Pod, generation: number, prefix: string, error?: string): string {
  const init = (pod.spec?.initContainers ?? []).map(allocation);
  const containers = (pod.spec?.containers ?? []).map(allocation);
  const summary = { ...(init.length === 0 ? {} : { initContainers: init }), ...(containers.length === 0 ? {} : { containers }), generation, ...(error === undefined || error === '' ? {} : { error }) };
  return `${prefix}: ${JSON.stringify(summary)}`;
}
