/**
 * Builds the per-pod machinery — lifecycle kernel, restart and pull backoffs, image puller,
 * start-failure cache, executor, reconciler — from the collaborators it cannot make itself (the
 * runtime, the API-facing writers, the desired-pod store). `cmd/assembly/pod-sync.ts` calls it with
 * real clients; component tests call it with fakes, so both run the same wiring.
 *
 * Every per-pod manager is registered on the lifecycle here, once: that registration is how a pod
 * that is gone is forgotten everywhere. Adding a manager means adding it to `managers` below.
 */
import { podKeyOf } from '../../util/pod-key.js';
import { PREEMPTED_CONDITION_MESSAGE, PREEMPTED_MESSAGE, PREEMPTING_REASON, type PreemptionMetrics } from '../admission/preemption.js';
import type { Preemption } from '../admission/admit.js';
import type { ProbeMetrics } from '../probes/probe-metrics.js';
import { lastRecursiveReadOnlySupport, RuntimeFeatures, type RuntimeFeatureReader } from '../runtime/runtime-features.js';
import type { StartedPodMetrics, UserNamespacedPodMetrics } from '../runtime/execute-pod-actions.js';
import type { StartedContainerMetrics } from '../runtime/start-container.js';
import type { EnsureImageMetrics } from '../images/image-puller.js';
import { countContainerTerminations, type ContainerTerminationMetrics } from '../status/container-terminations.js';
import type { PodFlowCounters } from './reconciler-deps.js';
import { UserNamespaceManager } from '../userns/userns-manager.js';
import { IDS_PER_POD, defaultHostIds, nodeIdRange } from '../userns/id-range.js';
import type { LifecycleMetrics } from '../hooks/run-hook.js';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ImageService, RuntimeService, StatsRuntime } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import type { EnvSourceApi } from '../container/container-env.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { ServiceLister } from '../container/service-env.js';
import type { RuntimeHandlerLookup } from '../container/runtime-handlers.js';
import { DEFAULT_POD_DNS_SETTINGS, PodDnsConfigurer, type PodDnsSettings } from '../dns/pod-dns-configurer.js';
import { PodActionsExecutor } from '../runtime/execute-pod-actions.js';
import type { PulledRecords } from '../images/pulled-records.js';
import type { PullVerificationPolicy } from '../images/pull-verification.js';
import { ImagePuller, type NodePullCredentials, type PullCredentials } from '../images/image-puller.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import { PodEvictions } from '../lifecycle/evictions.js';
import { PodLifecycle } from '../lifecycle/pod-lifecycle.js';
import type { StaticPodNames } from '../lifecycle/static-pod-names.js';
import { PodReconciler } from './pod-reconciler.js';
import type { PodAdmission, PodStore } from './reconciler-deps.js';
import type { PullGate } from '../images/pull-gate.js';
import { CONTAINER_RESTART_BACKOFF, RestartBackoff } from '../model/restart-backoff.js';
import { ContainerStartFailures } from '../runtime/start-failures.js';
import { ProbeFailures } from '../probes/probe-failures.js';
import { ProberManager } from '../probes/prober-manager.js';
import type { ContainerReadinessStore } from '../probes/container-readiness.js';
import type { ContainerStatusSetter, StatusWriter } from '../status/status-manager.js';
import { PodStartTracker, trackPodStarts, type PodStartMetrics } from '../status/pod-start-tracker.js';
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { VolumeManager } from '../volumes/index.js';
import { admitHandlers, APPARMOR_NOT_ENABLED, PodAdmitter, type AdmissionSettings } from '../admission/index.js';
import { DEFAULT_MASKED_PATHS, type ContainerSecuritySettings } from '../container/security-context.js';
import type { DeviceManager } from '../devices/device-manager.js';
import { PodCgroupManager } from '../cgroups/pod-cgroups.js';
import type { CgroupFs } from '../cgroups/cgroupfs.js';
import type { PodCgroupPolicy } from '../cgroups/pod-cgroup-config.js';

/** Pod cgroups under the QoS hierarchy (`--cgroups-per-qos`). */
export interface PodCgroupSettings {
  readonly fs: CgroupFs;
  /** `--cgroup-root` (`/`: the hierarchy is `/kubepods`). */
  readonly cgroupRoot: string;
  readonly policy?: PodCgroupPolicy;
  /** Capacity less the reservations: what `kubepods` is limited to (`--enforce-node-allocatable=pods`). */
  readonly allocatable: () => { readonly milliCpu: number; readonly memoryBytes: number };
}
import { PodResizer } from '../resize/pod-resizer.js';
import { ResizeConditions } from '../resize/resize-conditions.js';
import { PodResourceState } from '../resize/resource-state.js';
import type { RuntimeSightingsWriter } from '../model/runtime-sightings.js';
import type { PodEventSink } from '../model/pod-event.js';
import type { ImageVolumeMetrics } from '../runtime/image-volumes.js';

/** Facts about this node the per-pod machinery needs. */
export interface PodSyncNode {
  readonly name: string;
  readonly ip: string;
  /** e.g. `containerd`, from the runtime's version. */
  readonly runtimeName: string;
  /** What the node can give pods: defaults for `resourceFieldRef` of containers without limits. */
  readonly allocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  /** `/var/log/pods` on a kubelet-compatible host. */
  readonly podLogDir: string;
  /** Where started containers' log links go: `/var/log/containers` on a kubelet-compatible host. */
  readonly containerLogLinkDir: string;
  /** nodelet's root directory (`/var/lib/nodelet`). */
  readonly rootDir: string;
  /** Cluster DNS, resolv.conf and hosts file of the node; {@link DEFAULT_POD_DNS_SETTINGS} when absent. */
  readonly dns?: PodDnsSettings;
}

/** The Node object this agent registered, as the node controller last read it (never polled per pod). */
export interface NodeObjectSource {
  /** Undefined until the node is registered. */
  node(): V1Node | undefined;
}

/** Every desired pod of this node: admission decides older pods first. */
export interface PodLister {
  list(): readonly V1Pod[];
  /** Whether every pod source has synced (absence from `list()` then means gone); unknown (never) when absent. */
  synced?(): boolean;
}

/**
 * A Node object built from {@link PodSyncNode} alone, for callers without a node controller
 * (component tests): the OS and hostname labels, no taints, allocatable CPU and memory, 110 pods.
 */
export function localNodeObject(node: PodSyncNode): V1Node {
  return {
    metadata: { name: node.name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': node.name } },
    status: { allocatable: { cpu: `${node.allocatable.milliCpu}m`, memory: String(node.allocatable.memoryBytes), pods: '110' } },
  };
}

/** The node's security settings: how containers are confined and which pods are admitted. */
export interface PodSecuritySettings extends ContainerSecuritySettings, AdmissionSettings {}

/**
 * Defaults for callers that do not probe the host (component tests): the kubelet's defaults with
 * no unsafe sysctls, AppArmor reported disabled, and a kernel new enough for every safe sysctl.
 */
export function defaultPodSecurity(rootDir: string): PodSecuritySettings {
  return {
    seccompProfileRoot: path.join(rootDir, 'seccomp'),
    seccompDefault: false,
    maskedPaths: DEFAULT_MASKED_PATHS,
    allowedUnsafeSysctls: [],
    kernelVersion: '6.1',
    appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED },
  };
}

/** What {@link assemblePodSync} is given. */
export interface PodSyncDeps {
  readonly node: PodSyncNode;
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly store: PodStore;
  readonly status: StatusWriter & ContainerStatusSetter & PodLifecycleObserver & { podStatus(uid: string): V1PodStatus | undefined };
  /** Probe results: written through the status manager's narrow entry point, read by status generation. */
  readonly probeResults: ContainerReadinessStore;
  readonly events: EventRecorder;
  readonly volumes: VolumeManager;
  readonly envApi: EnvSourceApi;
  /** The node's cached services (kubelet: the service informer): every container's service variables. */
  readonly services: ServiceLister;
  /** Told the runtime state each reconcile reported (PLEG reads it to drop their echoes); absent: not told. */
  readonly sightings?: RuntimeSightingsWriter;
  /** Which static pod holds each full name (registered on the lifecycle here); absent: no static pod sources. */
  readonly staticPodNames?: StaticPodNames;
  /** Resolves a pod's `runtimeClassName` to the handler its sandbox runs with. */
  readonly runtimeHandlers: RuntimeHandlerLookup;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly credentials?: PullCredentials;
  /** The node's credential provider plugins, tried after the pod's secrets. */
  readonly nodeCredentials?: NodePullCredentials;
  /** Node-wide image pull limits (live); the kubelet's defaults when absent. */
  readonly pullGate?: PullGate;
  /** What pulled each image, and when a pod must pull a present one again (KubeletEnsureSecretPulledImages). */
  readonly pullVerification?: { readonly records: PulledRecords; readonly policy: PullVerificationPolicy };
  readonly admission?: PodAdmission;
  /** Where the probers and the resizer tell what asks for a reconcile (a probe failure to act on, a resize that may fit). */
  readonly podEvents: PodEventSink;
  /** Container confinement and admission rules; {@link defaultPodSecurity} of the root dir when absent. */
  readonly security?: PodSecuritySettings;
  /** Managers from upper layers (e.g. the queue's failure counts) to register on the lifecycle too. */
  readonly extraManagers?: readonly PodLifecycleObserver[];
  /** The registered Node (labels, taints, allocatable) admission checks against; {@link localNodeObject} when absent. */
  readonly nodeObject?: NodeObjectSource;
  /** Every desired pod, for admission in creation order; the store's pods are unknown (none older) when absent. */
  readonly pods?: PodLister;
  /** Receives each pod's start duration (first seen to Running); none measured when absent. */
  readonly podStartMetrics?: PodStartMetrics;
  /** Pod cgroups under the QoS hierarchy; containerd's default placement when absent. */
  readonly cgroups?: PodCgroupSettings;
  /** Container memory usage, for refusing in-place memory limit decreases below it; every decrease is refused when absent. */
  readonly stats?: StatsRuntime;
  /** Counts HTTPS lifecycle hooks that fell back to HTTP; absent: not counted. */
  readonly lifecycleMetrics?: LifecycleMetrics;
  /** `kubelet_preemptions`; absent: not counted. */
  readonly preemptionMetrics?: PreemptionMetrics;
  /** The node's `/metrics/probes`; absent: probes are not counted. */
  readonly probeMetrics?: ProbeMetrics;
  /** What the runtime supports per handler; read from `runtime`'s Status when absent. */
  readonly runtimeFeatures?: RuntimeFeatureReader;
  /** The pods' user namespaces (loaded from disk by the caller); the kubelet's default range, nothing loaded, when absent. */
  readonly userNamespaces?: UserNamespaceManager;
  /** Counts user-namespaced pods started and failed; absent: not counted. */
  readonly usernsMetrics?: UserNamespacedPodMetrics;
  /** Pods started (sandboxes), orphans found in the runtime, pods admitted, containers started and terminated; absent: not counted. */
  readonly podFlowMetrics?: StartedPodMetrics & PodFlowCounters & StartedContainerMetrics & ContainerTerminationMetrics & EnsureImageMetrics;
  /** Counts image volumes asked for, mounted and failed (`kubelet_image_volume_*_total`); absent: not counted. */
  readonly imageVolumeMetrics?: ImageVolumeMetrics;
  /** The device manager (loaded from its checkpoint by the caller): admission, container configs, released with the pods; absent: no device plugins. */
  readonly devices?: DeviceManager;
}

/** The assembled machinery. */
export interface PodSync {
  readonly reconciler: PodReconciler;
  readonly lifecycle: PodLifecycle;
  /** Exposed for tests and the agent's self-report; owned here. */
  readonly restartBackoff: RestartBackoff;
  readonly startFailures: ContainerStartFailures;
  readonly prober: ProberManager;
  readonly probeFailures: ProbeFailures;
  /** Pod name resolution; its cluster settings are live (the NodeAgent's clusterDNS/clusterDomain). */
  readonly dns: PodDnsConfigurer;
  /**
   * How much per-pod state each holder built here keeps (entries or pods, per holder), for tests
   * and diagnostics: all zero once every pod is forgotten. The holders passed in
   * (status, events, volumes) report on their own.
   */
  perPodState(): Readonly<Record<PerPodHolder, number>>;
  /** Where the eviction manager records the pods it stops (then requests their sync). */
  readonly evictions: PodEvictions;
  /** The pod cgroup manager (start it before the first reconcile); undefined without {@link PodSyncDeps.cgroups}. */
  readonly cgroups: PodCgroupManager | undefined;
  /** Pods whose resize is in progress (PodResizeInProgress set), as the kubelet's status manager counts them. */
  resizesInProgress(): number;
}

/** The per-pod state holders {@link assemblePodSync} builds and registers on the lifecycle. */
export type PerPodHolder = 'lifecycle' | 'restartBackoff' | 'pullBackoff' | 'startFailures' | 'preparedVolumes' | 'volumeRefreshes' | 'probeWorkers' | 'probeFailures' | 'probeResults' | 'admission' | 'evictions' | 'resources' | 'resizeConditions';

/** The image puller with the pod's pull secrets and the node-wide pull limits, when given. */
function buildPuller(deps: PodSyncDeps): ImagePuller {
  return new ImagePuller({
    images: deps.images,
    events: deps.events,
    clock: deps.clock,
    ...(deps.credentials === undefined ? {} : { credentials: deps.credentials }),
    ...(deps.nodeCredentials === undefined ? {} : { nodeCredentials: deps.nodeCredentials }),
    ...(deps.pullGate === undefined ? {} : { gate: deps.pullGate }),
    ...(deps.pullVerification === undefined ? {} : { pulledRecords: deps.pullVerification.records, verificationPolicy: deps.pullVerification.policy }),
    ...(deps.podFlowMetrics === undefined ? {} : { ensureMetrics: deps.podFlowMetrics }),
  });
}

/** Pods that may run, as allocated: known to a source, not in a terminal phase, not terminated by the kernel. */
function activePods(deps: PodSyncDeps, lifecycle: PodLifecycle, resources: PodResourceState): () => readonly V1Pod[] {
  return () =>
    (deps.pods?.list() ?? [])
      .filter((p) => {
        const phase = p.status?.phase;
        return phase !== 'Succeeded' && phase !== 'Failed' && lifecycle.get(p.metadata?.uid ?? '')?.phase !== 'terminated';
      })
      .map((p) => resources.allocatedPod(p));
}

function buildCgroups(deps: PodSyncDeps, lifecycle: PodLifecycle, resources: PodResourceState): PodCgroupManager | undefined {
  const settings = deps.cgroups;
  if (settings === undefined) return undefined;
  return new PodCgroupManager({
    ...settings,
    activePods: activePods(deps, lifecycle, resources),
    clock: deps.clock,
    logger: deps.logger.child({ component: 'pod-cgroups' }),
  });
}

/**
 * The kubelet's preemption of pods for a critical one: each victim stops with its own grace period
 * and reports Failed, `Preempting`, with a DisruptionTarget condition, and a Warning event.
 */
function preemptPods(deps: PodSyncDeps, evictions: PodEvictions, preemption: Preemption): void {
  for (const victim of preemption.victims) {
    const key = podKeyOf(victim);
    const kill = { reason: PREEMPTING_REASON, message: PREEMPTED_MESSAGE, gracePeriodSeconds: victim.spec?.terminationGracePeriodSeconds ?? 30, disruptionMessage: PREEMPTED_CONDITION_MESSAGE };
    if (!evictions.record(key, kill)) continue;
    deps.events.record(victim, { type: 'Warning', reason: PREEMPTING_REASON, message: PREEMPTED_MESSAGE });
    deps.podEvents.emit({ kind: 'evicted', key, message: PREEMPTED_MESSAGE });
    deps.preemptionMetrics?.preempted(preemption.resource);
  }
}

/** What the node allocated to pods: admission, and in-place resizes against the same allocation record. */
function buildAllocation(
  deps: PodSyncDeps,
  security: PodSecuritySettings,
  parts: { lifecycle: PodLifecycle; evictions: PodEvictions },
): { admitter: PodAdmitter; resizer: PodResizer; resources: PodResourceState; resizeConditions: ResizeConditions; cgroups: PodCgroupManager | undefined } {
  const fallbackNode = localNodeObject(deps.node);
  const nodeObject = deps.nodeObject === undefined ? (): V1Node | undefined => fallbackNode : (): V1Node | undefined => deps.nodeObject?.node();
  const resources = new PodResourceState({ rootDir: deps.node.rootDir, logger: deps.logger.child({ component: 'pod-resources' }) });
  const resizeConditions = new ResizeConditions(deps.clock);
  const cgroups = buildCgroups(deps, parts.lifecycle, resources);
  // The device manager releases the devices of pods no source has any more (once every source synced).
  const active = activePods(deps, parts.lifecycle, resources);
  deps.devices?.useActivePods(() => (deps.pods?.synced?.() === true ? new Set(active().map((p) => p.metadata?.uid ?? '')) : undefined));
  const admitter = new PodAdmitter({
    handlers: admitHandlers(deps.devices === undefined ? security : { ...security, devices: deps.devices }),
    events: deps.events,
    node: nodeObject,
    // Pods are admitted (also after an agent restart) with what they were allocated, not a pending resize.
    pods: () => (deps.pods?.list() ?? []).map((p) => resources.allocatedPod(p)),
    allocated: (p) => resources.allocatedPod(p),
    preempt: (preemption) => { preemptPods(deps, parts.evictions, preemption); },
  });
  const resizer = new PodResizer({
    state: resources,
    conditions: resizeConditions,
    events: deps.events,
    runtime: deps.runtime,
    node: nodeObject,
    admittedPods: () => admitter.activePods(),
    podEvents: deps.podEvents,
    ...(deps.stats === undefined ? {} : { stats: deps.stats }),
    // The pod cgroup grows before the containers and shrinks after them.
    ...(cgroups === undefined ? {} : { podCgroups: cgroups }),
    logger: deps.logger.child({ component: 'resizer' }),
  });
  return { admitter, resizer, resources, resizeConditions, cgroups };
}

/** The kubelet's default user-namespace ranges (every ID from 65536 up, 110 pods), with nothing loaded from disk. */
function defaultUserNamespaces(rootDir: string): UserNamespaceManager {
  const range = nodeIdRange(defaultHostIds(IDS_PER_POD), { idsPerPod: IDS_PER_POD, maxPods: 110 });
  return new UserNamespaceManager({ rootDir, range, random: Math.random });
}

/** The executor's user-namespace parts: the deps', or the defaults. */
function userNamespaceParts(deps: PodSyncDeps): { runtimeFeatures: RuntimeFeatureReader; userNamespaces: UserNamespaceManager; usernsMetrics?: UserNamespacedPodMetrics } {
  return {
    runtimeFeatures: deps.runtimeFeatures ?? new RuntimeFeatures(deps.runtime),
    userNamespaces: deps.userNamespaces ?? defaultUserNamespaces(deps.node.rootDir),
    ...(deps.usernsMetrics === undefined ? {} : { usernsMetrics: deps.usernsMetrics }),
  };
}

/** The executor's optional counters (and the device manager), as the deps give them. */
/** The probe workers: they read the desired pod and its status, and report to the status manager. */
function buildProber(deps: PodSyncDeps, parts: { events: EventRecorder; failures: ProbeFailures; clock: Clock; logger: Logger }): ProberManager {
  return new ProberManager({
    runtime: deps.runtime,
    inputs: { desiredPod: (uid) => deps.store.get(uid), podStatus: (uid) => deps.status.podStatus(uid) },
    sinks: {
      setContainerReadiness: (key, id, ready) => deps.status.setContainerReadiness(key, id, ready),
      setContainerStartup: (key, id, started) => deps.status.setContainerStartup(key, id, started),
      failures: parts.failures,
      podEvents: deps.podEvents,
    },
    events: parts.events,
    clock: parts.clock,
    logger: parts.logger.child({ component: 'prober' }),
    metrics: deps.probeMetrics,
  });
}

/** The status writer the reconciler hands statuses to: measuring pod starts and counting container terminations when asked. */
function reportingWriter(deps: PodSyncDeps, podStarts: PodStartTracker | undefined): StatusWriter {
  const counted = deps.podFlowMetrics === undefined ? deps.status : countContainerTerminations(deps.status, deps.podFlowMetrics);
  return podStarts === undefined ? counted : trackPodStarts(counted, podStarts);
}

function executorMetrics(deps: PodSyncDeps): { lifecycleMetrics?: LifecycleMetrics; imageVolumeMetrics?: ImageVolumeMetrics; startedPodMetrics?: StartedPodMetrics; startedContainerMetrics?: StartedContainerMetrics; devices?: DeviceManager } {
  return {
    ...(deps.podFlowMetrics === undefined ? {} : { startedPodMetrics: deps.podFlowMetrics, startedContainerMetrics: deps.podFlowMetrics }),
    ...(deps.lifecycleMetrics === undefined ? {} : { lifecycleMetrics: deps.lifecycleMetrics }),
    ...(deps.imageVolumeMetrics === undefined ? {} : { imageVolumeMetrics: deps.imageVolumeMetrics }),
    ...(deps.devices === undefined ? {} : { devices: deps.devices }),
  };
}

/** Builds the per-pod machinery and registers every per-pod manager on its lifecycle. */
export function assemblePodSync(deps: PodSyncDeps): PodSync {
  const { node, clock, events } = deps;
  const logger = deps.logger;
  const lifecycle = new PodLifecycle({ clock, logger: logger.child({ component: 'pod-lifecycle' }) });
  const restartBackoff = new RestartBackoff(CONTAINER_RESTART_BACKOFF);
  const puller = buildPuller(deps);
  const startFailures = new ContainerStartFailures();
  const dns = new PodDnsConfigurer({ settings: node.dns ?? DEFAULT_POD_DNS_SETTINGS, rootDir: node.rootDir, nodeIp: node.ip, events });
  const security = deps.security ?? defaultPodSecurity(node.rootDir);
  const evictions = new PodEvictions();
  const { admitter, resizer, resources, resizeConditions, cgroups } = buildAllocation(deps, security, { lifecycle, evictions });
  const userns = userNamespaceParts(deps);
  const userNamespaces = userns.userNamespaces;
  const executor = new PodActionsExecutor({
    ...userns,
    runtime: deps.runtime,
    puller,
    restartBackoff,
    clock,
    volumes: deps.volumes,
    envApi: deps.envApi,
    services: deps.services,
    runtimeHandlers: deps.runtimeHandlers,
    events,
    nodeName: node.name,
    nodeIp: node.ip,
    podLogDir: node.podLogDir,
    containerLogLinkDir: node.containerLogLinkDir,
    rootDir: node.rootDir,
    nodeAllocatable: node.allocatable,
    lifecycle,
    dns,
    security,
    logger: logger.child({ component: 'executor' }),
    ...(cgroups === undefined ? {} : { cgroups }),
    ...executorMetrics(deps),
  });
  const probeFailures = new ProbeFailures();
  const prober = buildProber(deps, { events, failures: probeFailures, clock, logger });
  const podStarts = deps.podStartMetrics === undefined ? undefined : new PodStartTracker({ clock, metrics: deps.podStartMetrics });
  const managers: readonly PodLifecycleObserver[] = [evictions, resizer, deps.status, deps.probeResults, restartBackoff, puller, startFailures, executor, deps.volumes, userNamespaces, events, prober, probeFailures, admitter, ...(podStarts === undefined ? [] : [podStarts]), ...(cgroups === undefined ? [] : [cgroups]), ...(deps.staticPodNames === undefined ? [] : [deps.staticPodNames]), ...[deps.devices].filter((m) => m !== undefined), ...(deps.extraManagers ?? [])];
  for (const manager of managers) lifecycle.register(manager);
  const reconciler = new PodReconciler({
    ...(deps.podFlowMetrics === undefined ? {} : { podFlows: deps.podFlowMetrics }),
    store: deps.store,
    runtime: deps.runtime,
    executor,
    status: reportingWriter(deps, podStarts),
    volumes: deps.volumes,
    events,
    lifecycle,
    startFailures,
    probeResults: deps.probeResults,
    probeFailures,
    nodeName: node.name,
    nodeIp: node.ip,
    runtimeName: node.runtimeName,
    clock,
    logger: logger.child({ component: 'reconciler' }),
    ...(deps.admission === undefined ? {} : { admission: deps.admission }),
    admitter,
    evictions,
    resizer,
    agentStartedAtMs: prober.startedAtMs(),
    ...(deps.sightings === undefined ? {} : { sightings: deps.sightings }),
    ...(deps.staticPodNames === undefined ? {} : { staticPodNames: deps.staticPodNames }),
    recursiveReadOnlyOf: (handler) => lastRecursiveReadOnlySupport(userns.runtimeFeatures, handler),
    heldStatus: (uid) => deps.status.podStatus(uid),
    podLogDir: node.podLogDir,
  });
  const perPodState = perPodStateOf({ lifecycle, restartBackoff, puller, startFailures, executor, prober, probeFailures, probeResults: deps.probeResults, admitter, evictions, resources, resizeConditions });
  return { reconciler, lifecycle, restartBackoff, startFailures, prober, probeFailures, dns, perPodState, evictions, cgroups, resizesInProgress: () => resizeConditions.inProgressCount() };
}

/** The holders {@link PodSync.perPodState} reads. */
interface PerPodHolders {
  readonly lifecycle: PodLifecycle;
  readonly restartBackoff: RestartBackoff;
  readonly puller: ImagePuller;
  readonly startFailures: ContainerStartFailures;
  readonly executor: PodActionsExecutor;
  readonly prober: ProberManager;
  readonly probeFailures: ProbeFailures;
  readonly probeResults: ContainerReadinessStore;
  readonly admitter: PodAdmitter;
  readonly evictions: PodEvictions;
  readonly resources: PodResourceState;
  readonly resizeConditions: ResizeConditions;
}

function perPodStateOf(h: PerPodHolders): () => Readonly<Record<PerPodHolder, number>> {
  return () => ({
    lifecycle: h.lifecycle.size(),
    restartBackoff: h.restartBackoff.size,
    pullBackoff: h.puller.backoffSize(),
    startFailures: h.startFailures.size(),
    ...h.executor.heldPods(),
    probeWorkers: h.prober.workerCount(),
    probeFailures: h.probeFailures.size(),
    probeResults: h.probeResults.size(),
    admission: h.admitter.size(),
    evictions: h.evictions.size(),
    resources: h.resources.size(),
    resizeConditions: h.resizeConditions.size(),
  });
}
