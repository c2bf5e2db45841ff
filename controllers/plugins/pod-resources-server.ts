/**
 * The pod resources API v1 (`PodResourcesLister`) on `<root>/pod-resources/kubelet.sock`, as
 * monitoring agents (GPU exporters, topology-aware schedulers' agents) read it from the kubelet:
 *
 * - `List`: every active pod, its containers (restartable init containers first, then the
 *   containers, as the kubelet lists them) with the devices each holds, one entry per resource and
 *   NUMA node;
 * - `GetAllocatableResources`: the healthy devices of every resource, one entry per device;
 * - `Get`: one pod by namespace and name (`pod <name> in namespace <ns> not found` otherwise).
 *
 * CPU IDs, memory and dynamic resources are always empty: nodelet has no CPU or memory manager
 * and no DRA yet.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PodDevicesEntry } from '../../reconcilers/devices/pod-devices.js';
import type { PluginDevice } from '../../reconcilers/devices/types.js';
import { NO_TOPOLOGY_NUMA } from '../../reconcilers/devices/types.js';
import { isRecord } from '../../util/is-record.js';
import { pluginService, wireString } from './proto.js';

/** What the server reads of the devices (the device manager). */
export interface PodResourcesDevices {
  allocations(): readonly PodDevicesEntry[];
  allocatableDevices(): readonly { readonly resourceName: string; readonly device: PluginDevice }[];
}

export interface PodResourcesServerOptions {
  /** `<root>/pod-resources/kubelet.sock`. */
  readonly socketPath: string;
  readonly devices: PodResourcesDevices;
  /** The active pods (known to a source, not terminated). */
  readonly pods: () => readonly V1Pod[];
  readonly logger: Logger;
}

interface WireContainerDevices {
  resourceName: string;
  deviceIds: string[];
  topology?: { nodes: { ID: string }[] };
}

function topology(numa: string): Pick<WireContainerDevices, 'topology'> {
  return numa === NO_TOPOLOGY_NUMA ? {} : { topology: { nodes: [{ ID: numa }] } };
}

/** A container's devices: one entry per resource and NUMA node. */
export function containerDevices(entries: readonly PodDevicesEntry[], podUid: string, containerName: string): WireContainerDevices[] {
  return entries
    .filter((e) => e.podUid === podUid && e.containerName === containerName)
    .flatMap((e) => Object.entries(e.devicesPerNuma).map(([numa, ids]) => ({ resourceName: e.resourceName, deviceIds: [...ids], ...topology(numa) })));
}

/** The containers the kubelet lists: restartable init containers, then the containers. */
function listedContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...(pod.spec?.containers ?? [])];
}

/** One pod's `PodResources`. */
export function podResources(pod: V1Pod, entries: readonly PodDevicesEntry[]): Record<string, unknown> {
  const uid = pod.metadata?.uid ?? '';
  return {
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? '',
    containers: listedContainers(pod).map((c) => ({ name: c.name, devices: containerDevices(entries, uid, c.name), cpuIds: [], memory: [], dynamicResources: [] })),
    cpuIds: [],
    memory: [],
  };
}

/** The healthy devices, one entry per device with its NUMA nodes. */
export function allocatableResources(devices: PodResourcesDevices['allocatableDevices']): Record<string, unknown> {
  const entries = devices().map(({ resourceName, device }) => ({
    resourceName,
    deviceIds: [device.id],
    ...(device.numaNodes.length === 0 ? {} : { topology: { nodes: device.numaNodes.map((n) => ({ ID: String(n) })) } }),
  }));
  return { devices: entries, cpuIds: [], memory: [] };
}

type Handler = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;

export class PodResourcesServer {
  private server: Server | undefined;

  constructor(private readonly options: PodResourcesServerOptions) {}

  async start(): Promise<void> {
    const { socketPath } = this.options;
    await mkdir(path.dirname(socketPath), { recursive: true, mode: 0o750 });
    await rm(socketPath, { force: true });
    const server = new Server();
    server.addService(pluginService('podresources', 'v1.PodResourcesLister'), { List: this.list, GetAllocatableResources: this.allocatable, Get: this.get });
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${socketPath}`, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    this.server = server;
    this.options.logger.info({ socket: socketPath }, 'pod resources server started');
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.tryShutdown(() => { resolve(); });
    });
  }

  private readonly list: Handler = (_call, callback) => {
    const entries = this.options.devices.allocations();
    callback(null, { podResources: this.options.pods().map((pod) => podResources(pod, entries)) });
  };

  private readonly allocatable: Handler = (_call, callback) => {
    callback(null, allocatableResources(() => this.options.devices.allocatableDevices()));
  };

  private readonly get: Handler = (call, callback) => {
    const request = isRecord(call.request) ? call.request : {};
    const name = wireString(request.podName);
    const namespace = wireString(request.podNamespace);
    const pod = this.options.pods().find((p) => p.metadata?.name === name && p.metadata.namespace === namespace);
    if (pod === undefined) {
      callback({ code: status.UNKNOWN, details: `pod ${name} in namespace ${namespace} not found` });
      return;
    }
    callback(null, { podResources: podResources(pod, this.options.devices.allocations()) });
  };
}
