/** The device manager and the node's plugin sockets (`controllers/plugins/`): built before the Node (its capacity reads the manager), started before any pod. */
import type { V1Pod } from '@kubernetes/client-node';
import { createNodePlugins, pluginPaths, type NodePlugins } from '../../controllers/plugins/node-plugins.js';
import { allocationCodec } from '../../controllers/plugins/proto.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import { DeviceManager } from '../../reconcilers/devices/device-manager.js';
import type { NodeEventSink } from '../../reconcilers/events/node-event.js';
import type { PodLifecycle } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import type { NodeController } from '../../controllers/node/node-controller.js';
import type { AgentCore } from './core.js';
import { CsiDriverStore } from '../../reconcilers/volumes/csi/types.js';
import { createCsiNodeInfoApi } from '../../controllers/plugins/csi-node-info.js';

/** The CSI drivers registered now: filled by the registration watcher's CSIPlugin handler, read by the volume plugin. */
export function buildCsiDrivers(): CsiDriverStore {
  return new CsiDriverStore();
}

/** The device manager with its checkpoint read (a corrupt checkpoint stops the agent, as it stops the kubelet). */
export async function buildDeviceManager(core: AgentCore): Promise<DeviceManager> {
  const devices = new DeviceManager({ checkpointFile: pluginPaths(core.settings.rootDir).deviceCheckpoint, codec: allocationCodec, clock: core.clock, logger: core.logger.child({ component: 'device-manager' }) });
  await devices.start();
  return devices;
}

/** The plugin sockets, reading the pods the kernel has not terminated for the pod resources API. */
export function buildNodePlugins(core: AgentCore, parts: { devices: DeviceManager; store: DesiredPodStore; lifecycle: PodLifecycle; node: NodeController; nodeEvents: NodeEventSink; csiDrivers: CsiDriverStore }): NodePlugins {
  const { devices, store, lifecycle, node, nodeEvents } = parts;
  const activePods = (): V1Pod[] =>
    store.list().filter((p) => {
      const phase = p.status?.phase;
      return phase !== 'Succeeded' && phase !== 'Failed' && lifecycle.get(p.metadata?.uid ?? '')?.phase !== 'terminated';
    });
  return createNodePlugins({
    rootDir: core.settings.rootDir,
    devices,
    pods: activePods,
    clock: core.clock,
    logger: core.logger,
    // CSI drivers registering through plugins_registry/: the volume plugin reads the same store.
    csi: { store: parts.csiDrivers, nodeInfo: createCsiNodeInfoApi(core.kube, core.settings.nodeName) },
    onRefused: (message) => {
      const registered = node.node();
      // nodelet's own reason (the kubelet only logs it): a refused plugin shows in `kubectl describe node`.
      if (registered !== undefined) nodeEvents.recordNode({ name: core.settings.nodeName, uid: registered.metadata?.uid ?? '' }, { type: 'Warning', reason: 'FailedPluginRegistration', message });
    },
  });
}
