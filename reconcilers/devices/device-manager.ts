/**
 * The device manager (the kubelet's `cm/devicemanager`): what the node's device plugins advertise,
 * which devices each container holds, and what a container's CRI config gets from them.
 *
 * - **Resources** come and go with their plugins (`controllers/plugins/` calls
 *   {@link DeviceManager.pluginConnected}, {@link DeviceManager.devicesChanged},
 *   {@link DeviceManager.pluginDisconnected}). A plugin gone leaves its devices unhealthy: the
 *   resource's allocatable drops to 0 at once and the resource is reported 0 after the kubelet's
 *   grace of 5 minutes unless a plugin registers it again.
 * - **Allocation** happens before a container's first start (the kubelet allocates at admission and
 *   again "on a race during node restart"; nodelet's admission is pure, so it only checks that the
 *   devices are there, `admission/devices.ts`): the whole pod at once, init containers first, an
 *   init container's devices reused by the containers after it; the plugin's preference asked
 *   when there is a choice; `Allocate` per container. Concurrent pods never get the same device:
 *   devices being allocated are held aside until the plugin answers.
 * - **Checkpoint**: every change of allocations or registered devices is written to
 *   `kubelet_internal_checkpoint` (`checkpoint.ts`), writes in order, so a restarted agent gives a
 *   running container the devices it had, and never gives them to another pod.
 * - **Release**: a pod's devices are free once it is terminated (nothing of it runs), as the
 *   kubelet frees the devices of pods that are no longer active; pods the checkpoint names but no
 *   source has any more are released at the next allocation, once the sources are synced.
 *
 * A per-pod manager of the lifecycle registry (podTerminated, podForgotten).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import { chooseDevices, containerDeviceRequests, DeviceAllocationError, mergeRunOptions, wantsPreference } from './allocation.js';
import { encodeDeviceCheckpoint, readDeviceCheckpoint, writeDeviceCheckpoint, type AllocationCodec } from './checkpoint.js';
import { PodDevices, type PodDevicesEntry } from './pod-devices.js';
import { deviceIdsOf, NO_TOPOLOGY_NUMA, type DevicePluginEndpoint, type DevicePluginOptions, type DeviceRunOptions, type PluginDevice } from './types.js';

/** The kubelet's `endpointStopGracePeriod`: how long a resource whose plugin went stays advertised. */
export const ENDPOINT_STOP_GRACE_MS = 5 * 60_000;

export interface DeviceManagerOptions {
  /** `<root>/device-plugins/kubelet_internal_checkpoint`. */
  readonly checkpointFile: string;
  readonly codec: AllocationCodec;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Told when capacity or allocatable may have changed, so the Node is posted sooner. */
  readonly onCapacityChange?: () => void;
}

/** What admission reads of the devices (`admission/devices.ts`). Reads only; never calls out. */
export interface DeviceAdmissionView {
  /** Whether a resource is served by a device plugin (now, or in the checkpoint). */
  isDeviceResource(name: string): boolean;
  healthyDevices(resourceName: string): ReadonlySet<string>;
  /** Devices held per resource by every pod but `exceptPod`. */
  devicesInUse(exceptPod: string): ReadonlyMap<string, ReadonlySet<string>>;
  /** Devices held per resource by one pod. */
  podDevices(podUid: string): ReadonlyMap<string, ReadonlySet<string>>;
}

/** What a container's start asks of the devices (`runtime/start-container.ts`). */
export interface ContainerDeviceSource {
  /**
   * The container's device additions, allocating the pod's devices first if this container has
   * none yet, and calling `PreStartContainer` when its plugin asks for it. Undefined when the
   * container asks for no device-plugin resource.
   * @throws DeviceAllocationError, or the plugin's error
   */
  runOptions(pod: V1Pod, container: V1Container, signal?: AbortSignal): Promise<DeviceRunOptions | undefined>;
}

interface ServingEndpoint {
  readonly endpoint: DevicePluginEndpoint;
  readonly options: DevicePluginOptions;
}

interface ResourceState {
  devices: ReadonlyMap<string, PluginDevice>;
  serving: ServingEndpoint | undefined;
  /** When the last plugin of the resource went (or the agent started without it); undefined while one serves. */
  stoppedAt: number | undefined;
}

/** The node's extended resources from device plugins, as the Node's status reports them. */
export interface ExtendedResources {
  readonly capacity: Readonly<Record<string, number>>;
  readonly allocatable: Readonly<Record<string, number>>;
}

export class DeviceManager implements PodLifecycleObserver, DeviceAdmissionView, ContainerDeviceSource {
  private readonly resources = new Map<string, ResourceState>();
  /** Resources whose plugin stayed away past the grace: reported as 0, as the kubelet does. */
  private readonly removed = new Set<string>();
  private readonly pods = new PodDevices();
  /** Devices chosen for a container whose Allocate call has not answered yet. */
  private readonly inFlight = new Map<string, Set<string>>();
  private writes: Promise<void> = Promise.resolve();
  private activePods: () => ReadonlySet<string> | undefined = () => undefined;

  constructor(private readonly options: DeviceManagerOptions) {}

  /** Loads the checkpoint: allocations, and the resources known before (0 devices until their plugin registers again). @throws CorruptDeviceCheckpointError */
  async start(): Promise<void> {
    const checkpoint = await readDeviceCheckpoint(this.options.checkpointFile, this.options.codec);
    for (const entry of checkpoint.entries) this.pods.insert(entry);
    const now = this.options.clock.now();
    for (const name of Object.keys(checkpoint.registeredDevices)) this.resources.set(name, { devices: new Map(), serving: undefined, stoppedAt: now });
    this.options.logger.info({ allocations: checkpoint.entries.length, resources: Object.keys(checkpoint.registeredDevices) }, 'device manager checkpoint read');
  }

  /** Which pods are active (not terminated, known to a source); undefined while the sources are not synced. Set by the pod machinery. */
  useActivePods(activePods: () => ReadonlySet<string> | undefined): void {
    this.activePods = activePods;
  }

  /** A plugin registered for `resourceName`; it replaces any earlier one. */
  pluginConnected(resourceName: string, endpoint: DevicePluginEndpoint, options: DevicePluginOptions): void {
    const state = this.resources.get(resourceName);
    this.resources.set(resourceName, { devices: state?.devices ?? new Map(), serving: { endpoint, options }, stoppedAt: undefined });
    this.removed.delete(resourceName);
    this.options.logger.info({ resourceName, socket: endpoint.socketPath, options }, 'device plugin connected');
  }

  /** A plugin's stream ended: its devices turn unhealthy (allocatable 0) until it or another registers. */
  pluginDisconnected(resourceName: string, endpoint: DevicePluginEndpoint): void {
    const state = this.resources.get(resourceName);
    if (state?.serving?.endpoint !== endpoint) return;
    const devices = new Map([...state.devices].map(([id, d]) => [id, { ...d, health: 'Unhealthy' as const }]));
    this.resources.set(resourceName, { devices, serving: undefined, stoppedAt: this.options.clock.now() });
    this.options.logger.info({ resourceName, socket: endpoint.socketPath }, 'device plugin disconnected: its devices are unhealthy');
    this.changed();
  }

  /** A plugin's `ListAndWatch` answer: the resource's devices, replacing the last list. */
  devicesChanged(resourceName: string, devices: readonly PluginDevice[]): void {
    const state = this.resources.get(resourceName);
    if (state === undefined) return;
    this.resources.set(resourceName, { ...state, devices: new Map(devices.map((d) => [d.id, d])) });
    const healthy = devices.filter((d) => d.health === 'Healthy').length;
    this.options.logger.info({ resourceName, devices: devices.length, healthy }, 'device plugin devices updated');
    this.changed();
  }

  /** Capacity (every device) and allocatable (healthy ones) per resource; resources gone past the grace are 0 in both. */
  extendedResources(): ExtendedResources {
    const now = this.options.clock.now();
    const capacity: Record<string, number> = {};
    const allocatable: Record<string, number> = {};
    let expired = false;
    for (const [name, state] of this.resources) {
      if (state.stoppedAt !== undefined && now - state.stoppedAt >= ENDPOINT_STOP_GRACE_MS) {
        this.resources.delete(name);
        this.removed.add(name);
        expired = true;
        continue;
      }
      capacity[name] = state.devices.size;
      allocatable[name] = this.healthyDevices(name).size;
    }
    for (const name of this.removed) {
      capacity[name] = 0;
      allocatable[name] = 0;
    }
    if (expired) this.persist();
    return { capacity, allocatable };
  }

  isDeviceResource(name: string): boolean {
    return this.resources.has(name) || this.pods.entries().some((e) => e.resourceName === name);
  }

  healthyDevices(resourceName: string): ReadonlySet<string> {
    const devices = this.resources.get(resourceName)?.devices ?? new Map<string, PluginDevice>();
    return new Set([...devices.values()].filter((d) => d.health === 'Healthy').map((d) => d.id));
  }

  devicesInUse(exceptPod: string): ReadonlyMap<string, ReadonlySet<string>> {
    return this.pods.devicesInUse(exceptPod);
  }

  podDevices(podUid: string): ReadonlyMap<string, ReadonlySet<string>> {
    return this.pods.podDevices(podUid);
  }

  /** Every allocation held (the pod resources API, tests). */
  allocations(): PodDevicesEntry[] {
    return this.pods.entries();
  }

  /** Every device of every resource with a plugin (the pod resources API's allocatable: the healthy ones). */
  allocatableDevices(): { resourceName: string; device: PluginDevice }[] {
    return [...this.resources].flatMap(([resourceName, state]) => [...state.devices.values()].filter((d) => d.health === 'Healthy').map((device) => ({ resourceName, device })));
  }

  async runOptions(pod: V1Pod, container: V1Container, signal?: AbortSignal): Promise<DeviceRunOptions | undefined> {
    const uid = pod.metadata?.uid ?? '';
    const wanted = containerDeviceRequests(container, (name) => this.isDeviceResource(name));
    if (wanted.size === 0) return undefined;
    if ([...wanted.keys()].some((r) => this.pods.containerDevices(uid, container.name, r) === undefined)) await this.allocatePod(pod, signal);
    for (const resourceName of wanted.keys()) await this.preStart(uid, container.name, resourceName, signal);
    return mergeRunOptions(this.pods.containerResources(uid, container.name), (conflict) => {
      this.options.logger.error({ pod: uid, container: container.name, ...conflict }, 'device plugins gave conflicting settings: the first kept');
    });
  }

  podTerminated(key: PodKey): void {
    this.release([key.uid]);
  }

  podForgotten(key: PodKey): void {
    this.release([key.uid]);
  }

  /** Resolves once every checkpoint write started so far is done. */
  async flushed(): Promise<void> {
    await this.writes;
  }

  /** Allocates every container of the pod that has no devices yet, init containers first (see the header). */
  private async allocatePod(pod: V1Pod, signal: AbortSignal | undefined): Promise<void> {
    this.releaseInactive();
    const uid = pod.metadata?.uid ?? '';
    const reusable = new Map<string, Set<string>>();
    const containers = [...(pod.spec?.initContainers ?? []).map((c) => ({ c, init: c.restartPolicy !== 'Always' })), ...(pod.spec?.containers ?? []).map((c) => ({ c, init: false }))];
    try {
      for (const { c, init } of containers) {
        for (const [resourceName, needed] of containerDeviceRequests(c, (name) => this.isDeviceResource(name))) {
          const held = this.pods.containerDevices(uid, c.name, resourceName);
          const ids = held === undefined ? await this.allocateContainer({ uid, containerName: c.name, resourceName, needed, reusable: reusable.get(resourceName) ?? new Set() }, signal) : deviceIdsOf(held);
          const set = reusable.get(resourceName) ?? new Set<string>();
          for (const id of ids) {
            if (init) set.add(id);
            else set.delete(id);
          }
          reusable.set(resourceName, set);
        }
      }
    } finally {
      this.persist();
    }
  }

  private async allocateContainer(request: { uid: string; containerName: string; resourceName: string; needed: number; reusable: ReadonlySet<string> }, signal: AbortSignal | undefined): Promise<string[]> {
    const { resourceName, needed } = request;
    const state = this.resources.get(resourceName);
    if (state === undefined) throw new DeviceAllocationError(`cannot allocate unregistered device ${resourceName}`);
    const healthy = this.healthyDevices(resourceName);
    if (healthy.size === 0) throw new DeviceAllocationError(`no healthy devices present; cannot allocate unhealthy devices ${resourceName}`);
    const serving = state.serving;
    if (serving === undefined) throw new DeviceAllocationError(`unknown Device Plugin ${resourceName}`);
    const reusable = new Set([...request.reusable].filter((id) => healthy.has(id)));
    const available = (): Set<string> => {
      const taken = new Set([...(this.pods.devicesInUse().get(resourceName) ?? []), ...(this.inFlight.get(resourceName) ?? [])]);
      return new Set([...this.healthyDevices(resourceName)].filter((id) => !taken.has(id)));
    };
    let preferred: string[] = [];
    if (serving.options.getPreferredAllocationAvailable && wantsPreference({ resourceName, needed, reusable, available: available() })) {
      preferred = await serving.endpoint.preferredAllocation({ available: [...available(), ...reusable], mustInclude: [...reusable].slice(0, needed), size: needed }, signal);
    }
    const chosen = chooseDevices({ resourceName, needed, reusable, available: available(), preferred });
    const flying = this.inFlight.get(resourceName) ?? new Set<string>();
    this.inFlight.set(resourceName, flying);
    for (const id of chosen) flying.add(id);
    try {
      const allocation = await serving.endpoint.allocate(chosen, signal);
      this.pods.insert({ podUid: request.uid, containerName: request.containerName, resourceName, devicesPerNuma: this.byNuma(resourceName, chosen), allocation });
    } finally {
      for (const id of chosen) flying.delete(id);
    }
    this.options.logger.info({ pod: request.uid, container: request.containerName, resourceName, devices: chosen }, 'devices allocated');
    return chosen;
  }

  private async preStart(uid: string, containerName: string, resourceName: string, signal: AbortSignal | undefined): Promise<void> {
    const state = this.resources.get(resourceName);
    const held = this.pods.containerDevices(uid, containerName, resourceName);
    if (state?.serving === undefined) {
      // A container that holds its devices from before a restart runs on without its plugin; a new start needs it.
      if (held !== undefined && state !== undefined) return;
      throw new DeviceAllocationError(`endpoint not found in cache for a registered resource: ${resourceName}`);
    }
    if (!state.serving.options.preStartRequired) return;
    if (held === undefined) throw new DeviceAllocationError(`no devices found allocated in local cache for pod ${uid}, container ${containerName}, resource ${resourceName}`);
    try {
      await state.serving.endpoint.preStartContainer(deviceIdsOf(held), signal);
    } catch (error) {
      throw new DeviceAllocationError(`device plugin PreStartContainer rpc failed with err: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private byNuma(resourceName: string, ids: readonly string[]): Record<string, string[]> {
    const devices = this.resources.get(resourceName)?.devices;
    const out: Record<string, string[]> = {};
    for (const id of ids) {
      const nodes = devices?.get(id)?.numaNodes ?? [];
      for (const numa of nodes.length === 0 ? [NO_TOPOLOGY_NUMA] : nodes.map(String)) (out[numa] ??= []).push(id);
    }
    return out;
  }

  private releaseInactive(): void {
    const active = this.activePods();
    if (active === undefined) return;
    this.release(this.pods.podUids().filter((uid) => !active.has(uid)));
  }

  private release(uids: readonly string[]): void {
    if (!this.pods.delete(uids)) return;
    this.options.logger.info({ pods: uids }, 'devices of pods no longer active released');
    this.persist();
  }

  private changed(): void {
    this.persist();
    this.options.onCapacityChange?.();
  }

  /** Queues a checkpoint write of the current state (writes run one after another, in order). */
  private persist(): void {
    const registeredDevices = Object.fromEntries([...this.resources.keys()].map((name) => [name, [...this.healthyDevices(name)]]));
    const text = encodeDeviceCheckpoint({ entries: this.pods.entries(), registeredDevices }, this.options.codec);
    this.writes = this.writes
      .then(() => writeDeviceCheckpoint(this.options.checkpointFile, text))
      .catch((error: unknown) => {
        this.options.logger.error({ err: error, file: this.options.checkpointFile }, 'writing the device manager checkpoint failed');
      });
  }
}
