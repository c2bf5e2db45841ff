/** The per-pod machinery (`reconcilers/pod/pod-sync.ts`) with its API-facing writers: events, pod status, volume sources. */
import { podCountsView } from './node-metrics.js';
import path from 'node:path';
import { CoreV1Client } from '../../kube/core-v1.js';
import type { AllocatableView } from '../../controllers/node/allocatable.js';
import type { NodeController } from '../../controllers/node/node-controller.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import type { StaticPods } from '../../controllers/pod-sources/static-pods.js';
import type { ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import type { ServiceSource } from '../../controllers/services/service-source.js';
import { createApiRuntimeHandlers } from '../../controllers/runtimeclass/api-runtime-handlers.js';
import { ETC_HOSTS_PATH } from '../../reconcilers/dns/pod-dns-configurer.js';
import { ApiEventRecorder } from '../../reconcilers/events/api-event-recorder.js';
import type { EventRecorder } from '../../reconcilers/events/event-recorder.js';
import type { NodePullCredentials } from '../../reconcilers/images/image-puller.js';
import type { PullGate } from '../../reconcilers/images/pull-gate.js';
import { createPullCredentials } from '../../reconcilers/images/pull-secrets.js';
import { PulledRecords } from '../../reconcilers/images/pulled-records.js';
import { probeHostSecurity } from '../../reconcilers/admission/host-security.js';
import type { NodeShutdownStatus } from '../../reconcilers/admission/node-shutdown.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { RuntimeSightingsWriter } from '../../reconcilers/model/runtime-sightings.js';
import { assemblePodSync, type PodCgroupSettings, type PodSync, type PodSyncDeps } from '../../reconcilers/pod/pod-sync.js';
import { ContainerReadinessStore } from '../../reconcilers/probes/container-readiness.js';
import { StatusManager, podStatusApi } from '../../reconcilers/status/status-manager.js';
import { createCsiVolumeApi, createVolumeManager, createVolumeSourceApi, type CsiDriverLookup, type VolumeManager } from '../../reconcilers/volumes/index.js';
import type { PodKey } from '../../util/pod-key.js';
import type { RuntimeFeatureReader } from '../../reconcilers/runtime/runtime-features.js';
import type { UserNamespaceManager } from '../../reconcilers/userns/userns-manager.js';
import type { AgentCore } from './core.js';
import type { DeviceManager } from '../../reconcilers/devices/device-manager.js';

/** The per-pod machinery with its API-facing writers. */
/** The recorders the per-pod machinery feeds. */
function podSyncMetrics(metrics: AgentCore['metrics']): Pick<PodSyncDeps, 'podStartMetrics' | 'lifecycleMetrics' | 'probeMetrics' | 'preemptionMetrics' | 'usernsMetrics' | 'imageVolumeMetrics' | 'podFlowMetrics'> {
  return {
    podStartMetrics: metrics.podStarts,
    lifecycleMetrics: metrics.lifecycle,
    probeMetrics: metrics.probes.recorder,
    preemptionMetrics: metrics.preemptions,
    usernsMetrics: metrics.userNamespacedPods,
    imageVolumeMetrics: metrics.imageVolumes,
    podFlowMetrics: metrics.pods,
  };
}

/** What the per-pod machinery is built from, beside the agent's core. */
export interface PodSyncParts {
  store: DesiredPodStore;
  queue: ReconcileQueue;
  podEvents: PodEventSink;
  admission: { isPaused(): boolean };
  /** The node shutdown manager's mark; undefined: graceful node shutdown is off. */
  nodeShutdown: NodeShutdownStatus | undefined;
  services: ServiceSource;
  node: NodeController;
  staticPods: StaticPods | undefined;
  allocatable: AllocatableView;
  pullGate: PullGate;
  cgroups: PodCgroupSettings | undefined;
  sightings: RuntimeSightingsWriter;
  /** The credential provider plugins' credentials; undefined: none configured. */
  nodeCredentials: NodePullCredentials | undefined;
  /** The runtime's handlers and features (refreshed by the node's readiness check). */
  runtimeFeatures: RuntimeFeatureReader;
  /** The pods' user namespaces, loaded from disk. */
  userNamespaces: UserNamespaceManager;
  /** The device manager, its checkpoint read. */
  devices: DeviceManager;
  /** The CSI drivers registered now (`plugins_registry/`). */
  csiDrivers: CsiDriverLookup;
  /** The set of volumes in use changed: post the Node's status. */
  onVolumesInUseChanged: () => void;
}

export function buildPodSync(
  core: AgentCore,
  parts: PodSyncParts,
): { podSync: PodSync; status: StatusManager; events: EventRecorder; volumes: VolumeManager } {
  const { settings, logger, clock, kube, cri } = core;
  const api = new CoreV1Client(kube);
  const events = new ApiEventRecorder({ core: new CoreV1Client(core.eventKube), nodeName: settings.nodeName, clock, logger: logger.child({ component: 'events' }) });
  const volumeApi = createVolumeSourceApi(kube);
  const volumes = createVolumeManager({
    rootDir: settings.rootDir,
    api: volumeApi,
    logger,
    nodeAllocatableMemoryBytes: parts.allocatable.memoryBytes,
    nodeAllocatableMilliCpu: parts.allocatable.milliCpu,
    csi: { drivers: parts.csiDrivers, api: createCsiVolumeApi(kube), nodeName: settings.nodeName, onVolumesInUseChanged: parts.onVolumesInUseChanged },
  });
  // Probe results: written by the status manager's narrow entry point, read by status generation.
  const probeResults = new ContainerReadinessStore();
  // The status manager retries unwritten statuses on its own loop, through API outages.
  const { staticPods } = parts;
  // The kubelet's layout: <root>/image_manager/pulled/, one record per image nodelet pulled.
  const pulledRecords = new PulledRecords(path.join(settings.rootDir, 'image_manager', 'pulled'));
  const status = new StatusManager({
    api: podStatusApi(api),
    clock,
    logger: logger.child({ component: 'status' }),
    readiness: probeResults, metrics: core.metrics.pods,
    // A static pod's status goes to its mirror pod.
    ...(staticPods === undefined ? {} : { statusTarget: (key: PodKey) => staticPods.statusTarget(key), isStatic: (key: PodKey) => staticPods.isStatic(key) }),
  });
  const podSync = assemblePodSync({
    node: {
      name: settings.nodeName,
      ip: settings.nodeIp,
      runtimeName: core.runtimeVersion.runtimeName,
      allocatable: parts.allocatable,
      podLogDir: settings.podLogDir,
      containerLogLinkDir: settings.containerLogLinkDir,
      rootDir: settings.rootDir,
      // Pod name resolution: the NodeAgent's clusterDNS/clusterDomain replace the first two live.
      dns: { cluster: { servers: settings.clusterDns, domain: settings.clusterDomain }, resolvConf: settings.resolvConf, nodeHostsFile: ETC_HOSTS_PATH },
    },
    runtime: cri.runtime,
    stats: cri.runtime,
    images: cri.image,
    store: parts.store,
    status,
    probeResults,
    events,
    volumes,
    pullGate: parts.pullGate,
    pullVerification: { records: pulledRecords, policy: settings.imagePullCredentialsVerificationPolicy },
    envApi: volumeApi,
    services: parts.services,
    sightings: parts.sightings,
    // A static pod starts once no other of its full name runs; its mirror pod stays while it stops.
    ...(staticPods === undefined ? {} : { staticPodNames: staticPods.names }),
    runtimeHandlers: createApiRuntimeHandlers(kube),
    credentials: createPullCredentials({ readSecret: (namespace, name) => volumeApi.readSecret(namespace, name), events, logger: logger.child({ component: 'pull-secrets' }) }),
    ...(parts.nodeCredentials === undefined ? {} : { nodeCredentials: parts.nodeCredentials }),
    admission: parts.admission,
    // Admission reads the Node the node controller last wrote (labels, taints, allocatable) and the store's pods.
    nodeObject: parts.node,
    pods: parts.store,
    security: { ...probeHostSecurity(), allowedUnsafeSysctls: settings.allowedUnsafeSysctls, seccompProfileRoot: settings.seccompProfileRoot, seccompDefault: settings.seccompDefault, ...(parts.nodeShutdown === undefined ? {} : { nodeShutdown: parts.nodeShutdown }) },
    clock,
    logger,
    podEvents: parts.podEvents,
    extraManagers: [{ podForgotten: (key) => { parts.queue.forgetFailures(key.uid); } }],
    ...(parts.cgroups === undefined ? {} : { cgroups: parts.cgroups }),
    ...podSyncMetrics(core.metrics),
    runtimeFeatures: parts.runtimeFeatures, userNamespaces: parts.userNamespaces,
    devices: parts.devices,
  });
  // The pod counts on /metrics read the store, the kernel, the mirror pods and the resizes at each scrape.
  core.metrics.watchPods(podCountsView(parts.store, podSync, staticPods));
  core.metrics.watchPulledRecords(() => pulledRecords.count());
  return { podSync, status, events, volumes };
}
