/**
 * What an allocated resize asks of the running containers: the pure core of the kubelet's
 * `computePodResizeAction` and `IsPodResizeInProgress` (kuberuntime_manager.go, v1.36).
 *
 * - Only running app containers and sidecars are resized; others get the allocated values when
 *   they next start.
 * - A container's current values are what was last applied in place (the resource state), else
 *   what it was created with (its annotation). A container with neither (created by an older
 *   nodelet) is taken to run as allocated: nothing is known to differ.
 * - For each changed resource (CPU, memory) the container's `resizePolicy` decides: NotRequired
 *   (the default) → an in-place update; RestartContainer → the container is restarted (and then
 *   runs with the allocated values). One restart-requiring change restarts the container and no
 *   in-place update is made for it.
 * - Updates are ordered per resource with decreases first, so the node is never over-committed
 *   mid-way; memory is applied before CPU.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isSidecar } from '../model/sidecar.js';
import type { ObservedContainer, ObservedPod } from '../model/observed-pod.js';
import { latestContainer } from '../model/observed-pod.js';
import { createdWith, sameValues, valuesOf, type ResourceValues } from '../model/resource-values.js';

/** One in-place update of one resource of one container. */
export interface ContainerUpdate {
  readonly id: string;
  readonly name: string;
  readonly desired: ResourceValues;
  readonly current: ResourceValues;
}

export interface ResizeActions {
  /** In-place memory updates, decreases first. */
  readonly memory: readonly ContainerUpdate[];
  /** In-place CPU updates, decreases first. */
  readonly cpu: readonly ContainerUpdate[];
  /** Running containers to restart for the resize: runtime ID → the Killing event's message. */
  readonly restarts: ReadonlyMap<string, string>;
}

export const NO_RESIZE: ResizeActions = { memory: [], cpu: [], restarts: new Map() };

/** The values a running container has now; undefined when nothing is known. */
export type CurrentValuesOf = (container: ObservedContainer) => ResourceValues | undefined;

/** The resizable containers of the pod: app containers and sidecars (restartable init containers). */
export function resizableContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
}

/** Current values of a container: the last in-place update, else its creation annotation. */
export function currentValues(container: ObservedContainer, actuated: ResourceValues | undefined): ResourceValues | undefined {
  return actuated ?? createdWith(container.annotations);
}

function restartPolicyOf(container: V1Container, resource: 'cpu' | 'memory'): boolean {
  return container.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy === 'RestartContainer';
}

interface Running {
  readonly spec: V1Container;
  readonly observed: ObservedContainer;
  readonly current: ResourceValues;
  readonly desired: ResourceValues;
}

function runningResizable(pod: V1Pod, observed: ObservedPod, currentOf: CurrentValuesOf): Running[] {
  return resizableContainers(pod).flatMap((spec): Running[] => {
    const latest = latestContainer(observed, spec.name);
    if (latest?.state !== 'CONTAINER_RUNNING') return [];
    const current = currentOf(latest);
    if (current === undefined) return [];
    return [{ spec, observed: latest, current, desired: valuesOf(spec.resources) }];
  });
}

/** Whether a running container does not run with its allocated values yet (the kubelet's in-progress test). */
export function isResizeInProgress(pod: V1Pod, observed: ObservedPod, currentOf: CurrentValuesOf): boolean {
  return runningResizable(pod, observed, currentOf).some((r) => !sameValues(r.current, r.desired));
}

function sign(desired: number, current: number): number {
  return desired === current ? 0 : desired > current ? 1 : -1;
}

/** Decreases first (-1), then increases (1); stable within each group. */
function ordered(updates: readonly { readonly update: ContainerUpdate; readonly direction: number }[]): ContainerUpdate[] {
  return [...updates.filter((u) => u.direction < 0), ...updates.filter((u) => u.direction > 0)].map((u) => u.update);
}

/** Decides the in-place updates and restarts of an allocated pod. Pure. */
export function computeResizeActions(pod: V1Pod, observed: ObservedPod, currentOf: CurrentValuesOf): ResizeActions {
  const memory: { update: ContainerUpdate; direction: number }[] = [];
  const cpu: { update: ContainerUpdate; direction: number }[] = [];
  const restarts = new Map<string, string>();
  for (const r of runningResizable(pod, observed, currentOf)) {
    const { current: c, desired: d } = r;
    const memChanged = c.memoryLimitBytes !== d.memoryLimitBytes || c.memoryRequestBytes !== d.memoryRequestBytes;
    const cpuChanged = c.cpuLimitMilli !== d.cpuLimitMilli || c.cpuRequestMilli !== d.cpuRequestMilli;
    if ((memChanged && restartPolicyOf(r.spec, 'memory')) || (cpuChanged && restartPolicyOf(r.spec, 'cpu'))) {
      restarts.set(r.observed.id, `Container ${r.spec.name} resize requires restart`);
      continue;
    }
    const update = { id: r.observed.id, name: r.spec.name, desired: d, current: c };
    // As the kubelet: the limit's direction orders the update when the limit changes, else the request's.
    if (memChanged) memory.push({ update, direction: sign(d.memoryLimitBytes, c.memoryLimitBytes) || sign(d.memoryRequestBytes, c.memoryRequestBytes) });
    if (cpuChanged) cpu.push({ update, direction: sign(d.cpuLimitMilli, c.cpuLimitMilli) || sign(d.cpuRequestMilli, c.cpuRequestMilli) });
  }
  return { memory: ordered(memory), cpu: ordered(cpu), restarts };
}
