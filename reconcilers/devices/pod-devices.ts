/**
 * Which devices each container of each pod holds, with the plugin's answer for them (the kubelet's
 * `podDevices`). In memory only: the device manager checkpoints it (`checkpoint.ts`).
 */
import { deviceIdsOf, type ContainerDevices } from './types.js';

/** One allocation of the table, with its pod and container. */
export interface PodDevicesEntry extends ContainerDevices {
  readonly podUid: string;
  readonly containerName: string;
}

export class PodDevices {
  /** pod UID → container name → resource name → devices. */
  private readonly pods = new Map<string, Map<string, Map<string, ContainerDevices>>>();

  /** Records (or replaces) the devices of one container for one resource. */
  insert(entry: PodDevicesEntry): void {
    let containers = this.pods.get(entry.podUid);
    if (containers === undefined) this.pods.set(entry.podUid, (containers = new Map<string, Map<string, ContainerDevices>>()));
    let resources = containers.get(entry.containerName);
    if (resources === undefined) containers.set(entry.containerName, (resources = new Map<string, ContainerDevices>()));
    resources.set(entry.resourceName, { resourceName: entry.resourceName, devicesPerNuma: entry.devicesPerNuma, allocation: entry.allocation });
  }

  /** The devices of one container for one resource; undefined when none were allocated. */
  containerDevices(podUid: string, containerName: string, resourceName: string): ContainerDevices | undefined {
    return this.pods.get(podUid)?.get(containerName)?.get(resourceName);
  }

  /** Every resource's devices of one container, in resource name order. */
  containerResources(podUid: string, containerName: string): ContainerDevices[] {
    const resources = this.pods.get(podUid)?.get(containerName);
    return resources === undefined ? [] : [...resources.values()].sort((a, b) => a.resourceName.localeCompare(b.resourceName));
  }

  hasPod(podUid: string): boolean {
    return this.pods.has(podUid);
  }

  podUids(): string[] {
    return [...this.pods.keys()];
  }

  /** Forgets pods; true when one was held. */
  delete(podUids: Iterable<string>): boolean {
    let changed = false;
    for (const uid of podUids) changed = this.pods.delete(uid) || changed;
    return changed;
  }

  /** Device IDs in use per resource, by every pod (or every pod but `exceptPod`). */
  devicesInUse(exceptPod?: string): Map<string, Set<string>> {
    const inUse = new Map<string, Set<string>>();
    for (const entry of this.entries()) {
      if (entry.podUid === exceptPod) continue;
      let ids = inUse.get(entry.resourceName);
      if (ids === undefined) inUse.set(entry.resourceName, (ids = new Set()));
      for (const id of deviceIdsOf(entry)) ids.add(id);
    }
    return inUse;
  }

  /** Device IDs per resource held by one pod (all its containers). */
  podDevices(podUid: string): Map<string, Set<string>> {
    const held = new Map<string, Set<string>>();
    for (const entry of this.entries()) {
      if (entry.podUid !== podUid) continue;
      let ids = held.get(entry.resourceName);
      if (ids === undefined) held.set(entry.resourceName, (ids = new Set()));
      for (const id of deviceIdsOf(entry)) ids.add(id);
    }
    return held;
  }

  /** Every allocation, pods and containers in insertion order. */
  entries(): PodDevicesEntry[] {
    const out: PodDevicesEntry[] = [];
    for (const [podUid, containers] of this.pods) {
      for (const [containerName, resources] of containers) {
        for (const devices of resources.values()) out.push({ podUid, containerName, ...devices });
      }
    }
    return out;
  }
}
