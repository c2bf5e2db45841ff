/**
 * Device-plugin resources at admission, as the kubelet's resource allocation admit handler (run
 * after the sysctl check, before the predicates): a pod that asks for more devices of a plugin's
 * resource than are healthy and free is rejected with the kubelet's `UnexpectedAdmissionError`
 * and its message, `Allocate failed due to requested number of devices unavailable for
 * example.com/resource. Requested: 1, Available: 0, which is unexpected`.
 *
 * The kubelet allocates the devices right there; nodelet's handlers are pure, so this one counts:
 * free = healthy devices − devices held by other pods − devices that admitted pods still wait for
 * (their requests not yet allocated). The device manager picks the devices before the first
 * container starts (`devices/device-manager.ts`), from what this check left free.
 *
 * And the kubelet's `sanitizeNodeAllocatable` for the predicates after it: a pod that already holds
 * devices (an agent restart before its plugin registered again) is checked against an allocatable
 * at least what is allocated, so it is not rejected for devices it has.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { DeviceAdmissionView } from '../devices/device-manager.js';
import { parseQuantity } from '../model/quantity.js';
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';
import { podRequests } from './pod-requests.js';
import { UNEXPECTED_ADMISSION_ERROR } from './general-predicates.js';

const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? '';

/** The kubelet's message of an allocation that failed at admission. */
export function allocateFailedMessage(why: string): string {
  return `Allocate failed due to ${why}, which is unexpected`;
}

/** Devices of `resourceName` admitted pods asked for and do not hold yet. */
function pendingDevices(resourceName: string, pods: readonly V1Pod[], devices: DeviceAdmissionView): number {
  let pending = 0;
  for (const p of pods) {
    const wanted = podRequests(p).get(resourceName) ?? 0;
    const held = devices.podDevices(uidOf(p)).get(resourceName)?.size ?? 0;
    pending += Math.max(0, wanted - held);
  }
  return pending;
}

/** Why the pod's devices cannot be allocated, in the kubelet's words; undefined when they can. */
export function deviceShortfall(pod: V1Pod, otherPods: readonly V1Pod[], devices: DeviceAdmissionView): string | undefined {
  const uid = uidOf(pod);
  const requests = [...podRequests(pod)].filter(([name]) => devices.isDeviceResource(name)).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, amount] of requests) {
    const need = Math.floor(amount) - (devices.podDevices(uid).get(name)?.size ?? 0);
    if (need <= 0) continue;
    const healthy = devices.healthyDevices(name);
    if (healthy.size === 0) return `no healthy devices present; cannot allocate unhealthy devices ${name}`;
    const inUse = devices.devicesInUse(uid).get(name) ?? new Set<string>();
    const free = [...healthy].filter((id) => !inUse.has(id)).length - pendingDevices(name, otherPods, devices);
    if (free < need) return `requested number of devices unavailable for ${name}. Requested: ${need}, Available: ${Math.max(0, free)}`;
  }
  return undefined;
}

/** The admit handler over the device manager's view. */
export function deviceAdmitHandler(devices: DeviceAdmissionView): PodAdmitHandler {
  return {
    name: 'devices',
    admit: ({ pod, otherPods }): AdmitResult => {
      const why = deviceShortfall(pod, otherPods, devices);
      return why === undefined ? ADMITTED : { admit: false, reason: UNEXPECTED_ADMISSION_ERROR, message: allocateFailedMessage(why) };
    },
  };
}

/** The Node as the predicates see it for `pod`: allocatable raised to what is allocated when the pod holds devices (the kubelet's sanitizeNodeAllocatable). */
export function withAllocatedDevices(pod: V1Pod, node: V1Node, devices: DeviceAdmissionView): V1Node {
  if (devices.podDevices(uidOf(pod)).size === 0) return node;
  const allocatable = { ...(node.status?.allocatable ?? {}) };
  let raised = false;
  for (const [name, ids] of devices.devicesInUse('')) {
    const current = allocatable[name];
    if (current !== undefined && parseQuantity(current) >= ids.size) continue;
    allocatable[name] = String(ids.size);
    raised = true;
  }
  return raised ? { ...node, status: { ...node.status, allocatable } } : node;
}
