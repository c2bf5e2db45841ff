/**
 * The node's plugin sockets under nodelet's root directory, in the kubelet's layout so drivers'
 * manifests only change the host path they mount:
 *
 * ```
 * <root>/plugins_registry/            sockets of plugins announcing themselves (registration watcher)
 * <root>/plugins/                     where plugins keep their own sockets (made here, used by them)
 * <root>/device-plugins/kubelet.sock  the device plugins' Registration service
 * <root>/device-plugins/kubelet_internal_checkpoint   the device manager's checkpoint
 * <root>/pod-resources/kubelet.sock   the pod resources API v1
 * ```
 *
 * Start order: the registration server (plugins registering now reach a running manager), then
 * the registration watcher (which hands device plugins to the same server), then the pod resources
 * server. Stop is the reverse.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import { DEVICE_CHECKPOINT_FILE } from '../../reconcilers/devices/checkpoint.js';
import { DevicePluginRegistry, type DevicePluginSink } from './device-plugin-registry.js';
import { PluginWatcher } from './plugin-watcher.js';
import type { CsiDriverStore } from '../../reconcilers/volumes/csi/types.js';
import { CsiPluginHandler } from './csi-plugin-handler.js';
import type { CsiNodeInfoApi } from './csi-node-info.js';
import { PodResourcesServer, type PodResourcesDevices } from './pod-resources-server.js';

/** The kubelet's directories and sockets under a root directory. */
export function pluginPaths(rootDir: string): { pluginsRegistry: string; plugins: string; devicePlugins: string; deviceCheckpoint: string; podResourcesSocket: string } {
  const devicePlugins = path.join(rootDir, 'device-plugins');
  return {
    pluginsRegistry: path.join(rootDir, 'plugins_registry'),
    plugins: path.join(rootDir, 'plugins'),
    devicePlugins,
    deviceCheckpoint: path.join(devicePlugins, DEVICE_CHECKPOINT_FILE),
    podResourcesSocket: path.join(rootDir, 'pod-resources', 'kubelet.sock'),
  };
}

export interface NodePluginsOptions {
  readonly rootDir: string;
  /** The device manager: fed by the plugins, read by the pod resources API. */
  readonly devices: DevicePluginSink & PodResourcesDevices;
  /** The active pods, for the pod resources API. */
  readonly pods: () => readonly V1Pod[];
  readonly clock: Clock;
  readonly logger: Logger;
  /** A plugin refused by the registration watcher (a Node event). */
  readonly onRefused?: (message: string) => void;
  /** CSI drivers: the store the volume plugin reads and the Node/CSINode records; absent: CSIPlugin is refused. */
  readonly csi?: { readonly store: CsiDriverStore; readonly nodeInfo: CsiNodeInfoApi };
}

export interface NodePlugins {
  readonly registry: DevicePluginRegistry;
  readonly watcher: PluginWatcher;
  readonly podResources: PodResourcesServer;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createNodePlugins(options: NodePluginsOptions): NodePlugins {
  const paths = pluginPaths(options.rootDir);
  const registry = new DevicePluginRegistry({ dir: paths.devicePlugins, sink: options.devices, logger: options.logger.child({ component: 'device-plugins' }) });
  const csi = options.csi === undefined ? undefined : new CsiPluginHandler({ ...options.csi, logger: options.logger.child({ component: 'csi-drivers' }) });
  const watcher = new PluginWatcher({
    dir: paths.pluginsRegistry,
    // DRAPlugin has no handler yet: refused with the kubelet's message, never accepted.
    handlers: { DevicePlugin: registry.watcherHandler(), ...(csi === undefined ? {} : { CSIPlugin: csi }) },
    clock: options.clock,
    logger: options.logger.child({ component: 'plugin-watcher' }),
    ...(options.onRefused === undefined ? {} : { onRefused: options.onRefused }),
  });
  const podResources = new PodResourcesServer({ socketPath: paths.podResourcesSocket, devices: options.devices, pods: options.pods, logger: options.logger.child({ component: 'pod-resources' }) });
  return {
    registry,
    watcher,
    podResources,
    async start() {
      await mkdir(paths.plugins, { recursive: true, mode: 0o750 });
      await registry.start();
      await watcher.start();
      await podResources.start();
    },
    async stop() {
      await podResources.stop();
      await watcher.stop();
      csi?.close();
      await registry.stop();
    },
  };
}
