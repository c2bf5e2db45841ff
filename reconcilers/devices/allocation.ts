/**
 * The device manager's pure decisions: what a container asks for, which devices it gets, and what
 * its CRI config gets from them. As the kubelet's devicemanager (`devicesToAllocate`,
 * `deviceRunContainerOptions`), without NUMA alignment: nodelet has no topology manager, so every
 * device is equally good and the plugin's preference decides, then the lowest IDs.
 */
import type { V1Container } from '@kubernetes/client-node';
import { parseQuantity } from '../model/quantity.js';
import type { ContainerDevices, DeviceRunOptions } from './types.js';

/**
 * The device-plugin resources a container asks for, from its limits (extended resources cannot be
 * overcommitted: their requests equal their limits, so the kubelet reads the limits).
 */
export function containerDeviceRequests(container: V1Container, isDeviceResource: (name: string) => boolean): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const [name, value] of Object.entries(container.resources?.limits ?? {})) {
    if (!isDeviceResource(name)) continue;
    const count = Math.floor(parseQuantity(value));
    if (count > 0) wanted.set(name, count);
  }
  return wanted;
}

/** Why devices could not be chosen, in the kubelet's words. */
export class DeviceAllocationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceAllocationError';
  }
}

export function isDeviceAllocationError(error: unknown): error is DeviceAllocationError {
  return error instanceof DeviceAllocationError;
}

/** What {@link chooseDevices} decides from. */
export interface DeviceChoice {
  readonly resourceName: string;
  /** How many devices the container needs. */
  readonly needed: number;
  /** Devices an init container of the pod held and released: taken first (the kubelet's devicesToReuse). */
  readonly reusable: ReadonlySet<string>;
  /** Healthy devices no other container holds. */
  readonly available: ReadonlySet<string>;
  /** The plugin's preferred devices (GetPreferredAllocation); empty when it has none. */
  readonly preferred?: readonly string[];
}

/**
 * The devices a container gets: reusable ones first, then the plugin's preferred ones that are
 * available, then the available ones in ID order.
 * @throws DeviceAllocationError when not enough devices are available (the kubelet's message).
 */
export function chooseDevices(choice: DeviceChoice): string[] {
  const chosen: string[] = [];
  const take = (ids: Iterable<string>): boolean => {
    for (const id of ids) {
      if (chosen.length === choice.needed) break;
      if (!chosen.includes(id)) chosen.push(id);
    }
    return chosen.length === choice.needed;
  };
  if (take([...choice.reusable].sort())) return chosen;
  const available = [...choice.available].filter((id) => !chosen.includes(id)).sort();
  const remaining = choice.needed - chosen.length;
  if (available.length < remaining) {
    throw new DeviceAllocationError(`requested number of devices unavailable for ${choice.resourceName}. Requested: ${remaining}, Available: ${available.length}`);
  }
  if (take((choice.preferred ?? []).filter((id) => available.includes(id)))) return chosen;
  take(available);
  return chosen;
}

/**
 * How many devices the plugin should be asked to prefer among: only when there is a choice to
 * make (more available than still needed), as the kubelet calls GetPreferredAllocation.
 */
export function wantsPreference(choice: Omit<DeviceChoice, 'preferred'>): boolean {
  const reused = Math.min(choice.reusable.size, choice.needed);
  return choice.needed - reused > 0 && choice.available.size > choice.needed - reused;
}

/** A conflicting duplicate in the plugins' answers (logged by the caller, the first one kept). */
export interface RunOptionsConflict {
  readonly kind: 'env' | 'device' | 'mount' | 'annotation';
  readonly key: string;
}

/**
 * A container's CRI additions from its allocations, in resource name order: envs, device nodes,
 * mounts and annotations deduplicated by name or container path (the first kept, as the kubelet),
 * CDI device names deduplicated.
 */
export function mergeRunOptions(resources: readonly ContainerDevices[], onConflict?: (conflict: RunOptionsConflict) => void): DeviceRunOptions {
  const envs = new Map<string, string>();
  const devices = new Map<string, DeviceRunOptions['devices'][number]>();
  const mounts = new Map<string, DeviceRunOptions['mounts'][number]>();
  const annotations = new Map<string, string>();
  const cdi = new Set<string>();
  const keep = <T>(kind: RunOptionsConflict['kind'], map: Map<string, T>, same: (a: T, b: T) => boolean) => (key: string, value: T): void => {
    const existing = map.get(key);
    if (existing === undefined) map.set(key, value);
    else if (!same(existing, value)) onConflict?.({ kind, key });
  };
  const keepEnv = keep('env', envs, (a, b) => a === b);
  const keepDevice = keep('device', devices, (a, b) => a.hostPath === b.hostPath);
  const keepMount = keep('mount', mounts, (a, b) => a.hostPath === b.hostPath);
  const keepAnnotation = keep('annotation', annotations, (a, b) => a === b);
  for (const { allocation } of resources) {
    for (const [k, v] of Object.entries(allocation.envs)) keepEnv(k, v);
    for (const d of allocation.devices) keepDevice(d.containerPath, d);
    for (const m of allocation.mounts) keepMount(m.containerPath, m);
    for (const [k, v] of Object.entries(allocation.annotations)) keepAnnotation(k, v);
    for (const name of allocation.cdiDevices) cdi.add(name);
  }
  return {
    envs: [...envs].map(([key, value]) => ({ key, value })),
    devices: [...devices.values()],
    mounts: [...mounts.values()],
    annotations: Object.fromEntries(annotations),
    cdiDevices: [...cdi],
  };
}
