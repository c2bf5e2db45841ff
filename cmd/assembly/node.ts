/** The Node's registration, status and lease, and where the NodeAgent's node-policy settings land. */
import { RuntimeFeatures } from '../../reconcilers/runtime/runtime-features.js';
import type { RuntimeService } from '../../cri/types.js';
import { createHostInfo } from '../../controllers/node/host-info.js';
import type { Reservations } from '../../controllers/node/allocatable.js';
import { createNodeController, type NodeController, type NodeExtendedResources, type NodePressure } from '../../controllers/node/node-controller.js';
import { runtimeReadiness, type HealthSignal } from '../../controllers/node/runtime-readiness.js';
import { CachedImageList } from '../../controllers/node/node-images.js';
import { ApiEventRecorder } from '../../reconcilers/events/api-event-recorder.js';
import type { NodeEvent, NodeEventSink } from '../../reconcilers/events/node-event.js';
import { readFileSync } from 'node:fs';
import { cgroupLayout } from '../../reconcilers/cgroups/host-cgroupfs.js';
import { allocatableEnforcedEvent, cgroupV1Event } from '../../controllers/node/node-events.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import type { CrashLoopBackOffSettings, ImagePullSettings, ReservedResources } from '../../controllers/nodeagent/settings.js';
import type { LiveParts } from '../../controllers/nodeagent/targets.js';
import type { ImagePullLimits, PullGate } from '../../reconcilers/images/pull-gate.js';
import { crashLoopBackOffPolicy } from '../../reconcilers/model/restart-backoff.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import type { AgentCore } from './core.js';
import type { EnforcedAllocatable } from './pod-cgroups.js';

export function reservationsOf(settings: { readonly systemReserved: ReservedResources; readonly kubeReserved: ReservedResources }): Reservations {
  return { systemReserved: settings.systemReserved, kubeReserved: settings.kubeReserved };
}

/** Pull limits of validated image pull settings (flags or NodeAgent `spec.imagePulls`). */
export function pullLimitsOf(settings: ImagePullSettings): ImagePullLimits {
  return { concurrency: settings.serializeImagePulls ? 1 : settings.maxParallelImagePulls, qps: settings.registryPullQPS, burst: settings.registryBurst };
}

/** Where the NodeAgent's node-policy settings land: the Node's allocatable, the restart backoff, the pull gate. */
export function nodePolicyTargets(node: NodeController, allocatable: EnforcedAllocatable, podSync: PodSync, pullGate: PullGate): Pick<LiveParts, 'node' | 'crashLoopBackOff' | 'imagePulls'> {
  return {
    node: {
      setMaxPods: (n: number) => { node.setMaxPods(n); },
      setReserved: (r: Reservations) => { allocatable.setReservations(r); node.setReserved(r); },
    },
    crashLoopBackOff: { setSettings: (s: CrashLoopBackOffSettings) => { podSync.restartBackoff.setPolicy(crashLoopBackOffPolicy(s.maxContainerRestartPeriodMs)); } },
    imagePulls: { setSettings: (s: ImagePullSettings) => { pullGate.setLimits(pullLimitsOf(s)); } },
  };
}

/** Where the Node's own events go (the node controller's and the shutdown manager's). */
export function buildNodeEvents(core: AgentCore): ApiEventRecorder {
  const { eventKube, settings, clock, logger } = core;
  return new ApiEventRecorder({ core: new CoreV1Client(eventKube), nodeName: settings.nodeName, clock, logger: logger.child({ component: 'node-events' }) });
}

/** The Node's registration, status and lease, from the agent's settings and the runtime's readiness. */
export function buildNodeController(core: AgentCore, runtime: { readiness: ReturnType<typeof runtimeReadiness>; features: RuntimeFeatures }, node: { pressure: NodePressure; annotations: Readonly<Record<string, string>>; events: NodeEventSink; extendedResources: NodeExtendedResources; volumesInUse: () => readonly string[] }): NodeController {
  const { pressure, annotations, events, extendedResources, volumesInUse } = node;
  const { settings, heartbeatKube, runtimeVersion, logger, clock } = core;
  const images = new CachedImageList(core.cri.image, clock);
  return createNodeController({
    // The kubelet posts status and renews its lease on its heartbeat client, which is not
    // rate-limited. (Its registration uses the limited client; here it rides along: a few requests, once.)
    kube: heartbeatKube,
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    hostInfo: createHostInfo({ rootDir: settings.rootDir }),
    runtime: { version: () => Promise.resolve(runtimeVersion), readiness: runtime.readiness, features: () => runtime.features.last(), images: () => images.images() },
    logger,
    clock,
    maxPods: settings.maxPods,
    reservations: reservationsOf(settings),
    kubeletPort: settings.nodeServer.port,
    labels: settings.nodeLabels,
    annotations,
    taints: settings.registerWithTaints,
    pressure,
    events,
    startupEvents: () => startupEvents(settings),
    startup: core.metrics.nodeStartup,
    // The device plugins' resources (`example.com/gpu`) in capacity and allocatable.
    extendedResources,
    // The CSI volumes pods use: the attach-detach controller waits for them before the kubelet's attach check passes.
    volumesInUse,
  });
}

/**
 * The kubelet's start-up node events besides `Starting`: the cgroup v1 warning on such a host, and
 * `NodeAllocatableEnforced` when the pods' cgroup is held to the allocatable (cgroups per QoS).
 */
function startupEvents(settings: AgentCore['settings']): NodeEvent[] {
  let v1 = false;
  try {
    v1 = cgroupLayout(readFileSync('/proc/self/mountinfo', 'utf8')).version === 1;
  } catch {
    // No mount table to read: no claim about the host's cgroups.
  }
  return [...(v1 ? [cgroupV1Event()] : []), ...(settings.cgroups === undefined ? [] : [allocatableEnforcedEvent()])];
}

/**
 * The runtime half of the Node's readiness, whose CRI Status also refreshes what the runtime's
 * handlers support (user namespaces, recursive read-only mounts): one Status call serves both.
 */
export function buildRuntimeReadiness(runtime: Pick<RuntimeService, 'status'>, pleg: HealthSignal): { readiness: ReturnType<typeof runtimeReadiness>; runtimeFeatures: RuntimeFeatures } {
  const runtimeFeatures = new RuntimeFeatures(runtime);
  return { readiness: runtimeReadiness({ status: async (options) => runtimeFeatures.refresh(options) }, pleg), runtimeFeatures };
}
