/**
 * Applies an allocated resize in place, as the kubelet's `doPodResizeAction` (kuberuntime_manager.go,
 * v1.36): memory first, then CPU; for each, the containers in the order the plan gives (decreases
 * first), each with one `UpdateContainerResources` carrying the new values of that resource and
 * the current values of the other. Every accepted update is recorded at once (the resource state),
 * so a failure part-way leaves an exact record and the next reconcile finishes the rest.
 *
 * Memory limit decreases are checked against the container's current usage first, as the kubelet
 * does: a limit at or below what the container uses is refused (the kernel would reclaim or OOM
 * kill), reported as PodResizeInProgress/Error, and tried again later.
 *
 * Pod-level cgroups: the kubelet resizes the pod cgroup before the containers when the pod's
 * total grows and after them when it shrinks. `PodCgroupResizer` (reconcilers/cgroups/'s
 * manager) is called with `grow` before and `shrink` after each resource's container updates;
 * absent with `--cgroups-per-qos=false`.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStats, RuntimeService, StatsRuntime } from '../../cri/types.js';
import { linuxResources } from '../container/container-config.js';
import type { ContainerUpdate, ResizeActions } from './compute-resize-actions.js';
import type { PodResourceState } from './resource-state.js';
import { requirementsOf, type ResourceValues } from '../model/resource-values.js';

/** The pod cgroup's part of a resize; see the header. */
export interface PodCgroupResizer {
  /** Sets the pod cgroup's `resource` to what the allocated pod needs, when `direction` matches the change. */
  resize(pod: V1Pod, resource: 'cpu' | 'memory', direction: 'grow' | 'shrink'): Promise<void>;
}

export interface ActuateInput {
  readonly pod: V1Pod;
  readonly actions: ResizeActions;
  readonly runtime: Pick<RuntimeService, 'updateContainerResources'>;
  readonly state: PodResourceState;
  /** Container memory usage, for the decrease check; without it a decrease is refused (usage unknown). */
  readonly stats?: StatsRuntime;
  readonly podCgroups?: PodCgroupResizer;
  readonly signal?: AbortSignal;
}

/** Why a resize could not be actuated (the message of PodResizeInProgress/Error). */
export class ResizeActuationError extends Error {
  override readonly name = 'ResizeActuationError';
}

export function isResizeActuationError(error: unknown): error is ResizeActuationError {
  return error instanceof ResizeActuationError;
}

function isDecrease(u: ContainerUpdate): boolean {
  return u.desired.memoryLimitBytes > 0 && (u.current.memoryLimitBytes === 0 || u.desired.memoryLimitBytes < u.current.memoryLimitBytes);
}

/** Every container's figures; a failure to read them refuses the decrease (as the kubelet), a cancellation is thrown. */
async function containerStats(input: ActuateInput): Promise<ContainerStats[]> {
  if (input.stats === undefined) return [];
  try {
    return await input.stats.listContainerStats(input.signal === undefined ? {} : { signal: input.signal });
  } catch (error) {
    input.signal?.throwIfAborted();
    throw new ResizeActuationError(`unable to read memory usage for pod "${input.pod.metadata?.namespace ?? ''}/${input.pod.metadata?.name ?? ''}"`, { cause: error });
  }
}

/** The kubelet's `validateMemoryResizeAction`: no memory limit below what the container uses now. */
async function checkMemoryDecreases(input: ActuateInput): Promise<void> {
  const decreasing = input.actions.memory.filter(isDecrease);
  if (decreasing.length === 0) return;
  const stats = await containerStats(input);
  const problems = decreasing.flatMap((u): string[] => {
    const usage = stats.find((s) => s.id === u.id)?.memory?.usageBytes;
    if (usage === undefined) return [`missing container "${u.name}" memory usage`];
    return usage >= BigInt(u.desired.memoryLimitBytes) ? [`attempting to set container "${u.name}" memory limit (${u.desired.memoryLimitBytes}) below current usage (${usage})`] : [];
  });
  if (problems.length > 0) throw new ResizeActuationError(`cannot decrease memory limits: [${problems.join(', ')}]`);
}

/** The container's values after updating `resource`: that resource as desired, the other as it runs now. */
function merged(current: ResourceValues, desired: ResourceValues, resource: 'cpu' | 'memory'): ResourceValues {
  return resource === 'memory'
    ? { ...current, memoryLimitBytes: desired.memoryLimitBytes, memoryRequestBytes: desired.memoryRequestBytes }
    : { ...current, cpuLimitMilli: desired.cpuLimitMilli, cpuRequestMilli: desired.cpuRequestMilli };
}

async function updateContainers(input: ActuateInput, resource: 'cpu' | 'memory', running: Map<string, ResourceValues>): Promise<void> {
  const uid = input.pod.metadata?.uid ?? '';
  for (const u of input.actions[resource]) {
    const next = merged(running.get(u.id) ?? u.current, u.desired, resource);
    const resources = linuxResources({ name: u.name, resources: requirementsOf(next) }) ?? {};
    try {
      await input.runtime.updateContainerResources(u.id, resources, input.signal === undefined ? {} : { signal: input.signal });
    } catch (error) {
      input.signal?.throwIfAborted();
      throw new ResizeActuationError(`failed to update container "${u.name}" ${resource}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    running.set(u.id, next);
    input.state.setActuated(uid, u.id, next);
  }
}

/** Applies the in-place updates. @throws ResizeActuationError (what failed), or the signal's reason when cancelled. */
export async function actuateResize(input: ActuateInput): Promise<void> {
  const running = new Map<string, ResourceValues>();
  if (input.actions.memory.length > 0) await checkMemoryDecreases(input);
  for (const resource of ['memory', 'cpu'] as const) {
    if (input.actions[resource].length === 0) continue;
    await input.podCgroups?.resize(input.pod, resource, 'grow');
    await updateContainers(input, resource, running);
    await input.podCgroups?.resize(input.pod, resource, 'shrink');
  }
}
