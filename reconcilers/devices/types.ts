/**
 * The vocabulary of device plugins (`k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1`) as the device
 * manager and its users see it: what a plugin advertises (devices and their health), what it
 * answers when devices are allocated to a container, and the endpoint the manager calls. The gRPC
 * side (registration server, plugin clients) lives in `controllers/plugins/` and implements
 * {@link DevicePluginEndpoint}; nothing here knows about gRPC.
 */

/** A device's health as its plugin reports it in `ListAndWatch`. */
export type DeviceHealth = 'Healthy' | 'Unhealthy';

/** One device a plugin advertises. */
export interface PluginDevice {
  readonly id: string;
  readonly health: DeviceHealth;
  /** The NUMA nodes the device is attached to; empty when the plugin reports no topology. */
  readonly numaNodes: readonly number[];
}

/** The options a plugin answers `GetDevicePluginOptions` with. */
export interface DevicePluginOptions {
  /** `PreStartContainer` must be called before each start of a container with its devices. */
  readonly preStartRequired: boolean;
  /** The plugin implements `GetPreferredAllocation`. */
  readonly getPreferredAllocationAvailable: boolean;
}

/** A host path a plugin asks to mount into the container. */
export interface AllocatedMount {
  readonly containerPath: string;
  readonly hostPath: string;
  readonly readOnly: boolean;
}

/** A device node a plugin asks to expose in the container. */
export interface AllocatedDeviceSpec {
  readonly containerPath: string;
  readonly hostPath: string;
  /** cgroup permissions: `r`, `w`, `m` or a combination. */
  readonly permissions: string;
}

/** A plugin's `ContainerAllocateResponse`: what one container gets for the devices it was allocated. */
export interface ContainerAllocation {
  readonly envs: Readonly<Record<string, string>>;
  readonly mounts: readonly AllocatedMount[];
  readonly devices: readonly AllocatedDeviceSpec[];
  readonly annotations: Readonly<Record<string, string>>;
  /** Fully qualified CDI device names (`vendor.com/class=name`), passed to the runtime as CRI `CDI_devices`. */
  readonly cdiDevices: readonly string[];
}

export const EMPTY_ALLOCATION: ContainerAllocation = { envs: {}, mounts: [], devices: [], annotations: {}, cdiDevices: [] };

/**
 * One registered plugin as the manager calls it. Every call honours `signal` (the reconcile's
 * cancellation) and has its own deadline; a failure rejects with the plugin's error.
 */
export interface DevicePluginEndpoint {
  /** The plugin's socket path (identity of the endpoint, for logs and disconnection). */
  readonly socketPath: string;
  /** `GetPreferredAllocation` for one container: `size` devices among `available`, including `mustInclude`. */
  preferredAllocation(request: { readonly available: readonly string[]; readonly mustInclude: readonly string[]; readonly size: number }, signal?: AbortSignal): Promise<string[]>;
  /** `Allocate` for one container's devices. */
  allocate(deviceIds: readonly string[], signal?: AbortSignal): Promise<ContainerAllocation>;
  /** `PreStartContainer` with one container's devices. */
  preStartContainer(deviceIds: readonly string[], signal?: AbortSignal): Promise<void>;
}

/** What a container's CRI config gets from its devices (the kubelet's `DeviceRunContainerOptions`), merged over its resources. */
export interface DeviceRunOptions {
  readonly envs: readonly { readonly key: string; readonly value: string }[];
  readonly mounts: readonly AllocatedMount[];
  readonly devices: readonly AllocatedDeviceSpec[];
  readonly annotations: Readonly<Record<string, string>>;
  readonly cdiDevices: readonly string[];
}

/** The devices allocated to one container for one resource, with the plugin's answer. */
export interface ContainerDevices {
  readonly resourceName: string;
  /** Device IDs by NUMA node; `-1` holds devices without topology (the kubelet's checkpoint key). */
  readonly devicesPerNuma: Readonly<Record<string, readonly string[]>>;
  readonly allocation: ContainerAllocation;
}

/** The NUMA key of devices without topology, as the kubelet's checkpoint writes it. */
export const NO_TOPOLOGY_NUMA = '-1';

/** Every device ID of an allocation, whatever its NUMA node. */
export function deviceIdsOf(devices: ContainerDevices): string[] {
  return [...new Set(Object.values(devices.devicesPerNuma).flat())].sort();
}
