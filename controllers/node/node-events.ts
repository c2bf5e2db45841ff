/**
 * The Node's own events, with the kubelet's reasons and messages, derived from one heartbeat: the
 * status the API server held before it and the status it posts (the kubelet records them in its
 * status setters, `pkg/kubelet/nodestatus/setters.go`).
 *
 * - A pressure condition whose status changes (from nothing, `Unknown`, or the other value):
 *   `NodeHasSufficientMemory`/`NodeHasInsufficientMemory`, `NodeHasNoDiskPressure`/
 *   `NodeHasDiskPressure`, `NodeHasSufficientPID`/`NodeHasInsufficientPID`.
 * - Ready changing status (not its first appearance): `NodeReady`/`NodeNotReady`.
 * - Those all say `Node <name> status is now: <reason>`, type Normal.
 * - A boot ID that differs from the one posted before: Warning `Rebooted`,
 *   `Node <name> has been rebooted, boot id: <id>`.
 * - `spec.unschedulable` changing (the kubelet starts from schedulable): `NodeNotSchedulable`/
 *   `NodeSchedulable`.
 * The agent's start is `Starting` (`startingEvent`), recorded once per process, after its first
 * heartbeat reached the API server (so the event names the Node's UID).
 *
 * Compared with the kubelet v1.37 on this machine (`npm run kubelet:up`, its Node's events): it
 * also records `NodeAllocatableEnforced` (`Updated Node Allocatable limit across pods`, where it
 * enforces allocatable), `InvalidDiskCapacity` and `CgroupV1`, which nodelet does not; its new
 * Node showed `NodeReady` because its first status said NotReady (the same rule as here: Ready
 * counts only when a posted Ready condition changes).
 */
import type { V1NodeCondition, V1NodeStatus } from '@kubernetes/client-node';
import type { NodeEvent } from '../../reconcilers/events/node-event.js';

export type { NodeEvent, NodeEventSink, NodeRef } from '../../reconcilers/events/node-event.js';

/** Each pressure condition's event reasons, for False and True. */
const PRESSURE_EVENTS: Readonly<Record<string, { readonly False: string; readonly True: string }>> = {
  MemoryPressure: { False: 'NodeHasSufficientMemory', True: 'NodeHasInsufficientMemory' },
  DiskPressure: { False: 'NodeHasNoDiskPressure', True: 'NodeHasDiskPressure' },
  PIDPressure: { False: 'NodeHasSufficientPID', True: 'NodeHasInsufficientPID' },
};

function statusEvent(nodeName: string, reason: string): NodeEvent {
  return { type: 'Normal', reason, message: `Node ${nodeName} status is now: ${reason}` };
}

function statusOf(conditions: readonly V1NodeCondition[] | undefined, type: string): string | undefined {
  return conditions?.find((c) => c.type === type)?.status;
}

function conditionEvents(nodeName: string, before: readonly V1NodeCondition[] | undefined, after: readonly V1NodeCondition[]): NodeEvent[] {
  const events: NodeEvent[] = [];
  for (const condition of after) {
    const was = statusOf(before, condition.type);
    if (was === condition.status || (condition.status !== 'True' && condition.status !== 'False')) continue;
    const pressure = PRESSURE_EVENTS[condition.type];
    if (pressure !== undefined) events.push(statusEvent(nodeName, pressure[condition.status]));
    else if (condition.type === 'Ready' && was !== undefined) events.push(statusEvent(nodeName, condition.status === 'True' ? 'NodeReady' : 'NodeNotReady'));
  }
  return events;
}

/** The events one heartbeat records: `previous` is what the API server held, `next` what is posted. */
export function nodeStatusEvents(nodeName: string, previous: V1NodeStatus | undefined, next: V1NodeStatus): NodeEvent[] {
  const events = conditionEvents(nodeName, previous?.conditions, next.conditions ?? []);
  const oldBoot = previous?.nodeInfo?.bootID ?? '';
  const newBoot = next.nodeInfo?.bootID ?? '';
  if (oldBoot !== '' && newBoot !== '' && oldBoot !== newBoot) {
    events.push({ type: 'Warning', reason: 'Rebooted', message: `Node ${nodeName} has been rebooted, boot id: ${newBoot}` });
  }
  return events;
}

/** The event of `spec.unschedulable` changing from `was` to `now`, if it did. */
export function schedulableEvent(nodeName: string, was: boolean, now: boolean): NodeEvent | undefined {
  if (was === now) return undefined;
  return statusEvent(nodeName, now ? 'NodeNotSchedulable' : 'NodeSchedulable');
}

/** The agent's start, as the kubelet's `Starting kubelet.`. */
export function startingEvent(): NodeEvent {
  return { type: 'Normal', reason: 'Starting', message: 'Starting nodelet.' };
}

/** The kubelet's start-up warning on a cgroup v1 host (events.CgroupV1). */
export function cgroupV1Event(): NodeEvent {
  return {
    type: 'Warning',
    reason: 'CgroupV1',
    message: 'cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1',
  };
}

/** The kubelet's event once the pods' cgroup (kubepods) is held to the node's allocatable. */
export function allocatableEnforcedEvent(): NodeEvent {
  return { type: 'Normal', reason: 'NodeAllocatableEnforced', message: 'Updated Node Allocatable limit across pods' };
}
