/**
 * Node allocatable, as the kubelet's container manager computes it: capacity minus what
 * `--system-reserved` and `--kube-reserved` hold back (CPU, memory, ephemeral storage), never below
 * zero. Pure: the Node's status reports it, and admission and `resourceFieldRef` defaults use it.
 *
 * With `--cgroups-per-qos` the `kubepods` cgroup is limited to capacity less the reservations
 * (the kubelet's `--enforce-node-allocatable=pods`, `cmd/assembly/pod-cgroups.ts`); admission keeps pods
 * within allocatable either way.
 */
import { parseMilliCpu, parseQuantity } from '../../reconcilers/model/quantity.js';

/** Resource name → quantity (`cpu: 500m`, `memory: 1Gi`, `ephemeral-storage: 2Gi`, `pid: 1000`). */
export type ResourceQuantities = Readonly<Record<string, string>>;

/** What is held back from pods. */
export interface Reservations {
  readonly systemReserved: ResourceQuantities;
  readonly kubeReserved: ResourceQuantities;
}

export const NO_RESERVATIONS: Reservations = { systemReserved: {}, kubeReserved: {} };

/** The node's resources in base units. */
export interface NodeResources {
  readonly milliCpu: number;
  readonly memoryBytes: number;
  readonly ephemeralStorageBytes: number;
}

/** The amount of one resource a reservation names, 0 when it names none (quantities are validated where they are read). */
function reservedAmount(reserved: ResourceQuantities, name: string): number {
  const quantity = reserved[name];
  if (quantity === undefined) return 0;
  return name === 'cpu' ? parseMilliCpu(quantity) : parseQuantity(quantity);
}

function totalReserved(reservations: Reservations, name: string): number {
  return reservedAmount(reservations.systemReserved, name) + reservedAmount(reservations.kubeReserved, name);
}

/** Capacity minus both reservations, each resource at least 0. */
export function allocatableOf(capacity: NodeResources, reservations: Reservations): NodeResources {
  return {
    milliCpu: Math.max(0, capacity.milliCpu - totalReserved(reservations, 'cpu')),
    memoryBytes: Math.max(0, capacity.memoryBytes - totalReserved(reservations, 'memory')),
    ephemeralStorageBytes: Math.max(0, capacity.ephemeralStorageBytes - totalReserved(reservations, 'ephemeral-storage')),
  };
}

/** CPU millicores as the Node reports them: whole cores as `2`, else `1900m`. */
export function formatMilliCpu(milliCpu: number): string {
  return milliCpu % 1000 === 0 ? String(milliCpu / 1000) : `${milliCpu}m`;
}

/**
 * Allocatable CPU and memory as the per-pod machinery reads them (the `resourceFieldRef` default of
 * a container without limits), following live changes of the reservations.
 */
export class AllocatableView {
  private current: NodeResources;
  private readonly capacity: NodeResources;

  constructor(capacity: { readonly milliCpu: number; readonly memoryBytes: number }, reservations: Reservations) {
    // Ephemeral storage is not read through this view.
    this.capacity = { ...capacity, ephemeralStorageBytes: 0 };
    this.current = allocatableOf(this.capacity, reservations);
  }

  get milliCpu(): number {
    return this.current.milliCpu;
  }

  get memoryBytes(): number {
    return this.current.memoryBytes;
  }

  setReservations(reservations: Reservations): void {
    this.current = allocatableOf(this.capacity, reservations);
  }
}
