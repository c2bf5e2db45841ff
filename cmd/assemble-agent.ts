/**
 * The composition root: builds every part of the agent from its settings and hands each part its
 * collaborators. It holds no policy — node readiness lives in the node controller's folder, pod
 * decisions in the reconcilers, retry policy in the queue — only the wiring, in one place that
 * `cmd/agent.ts` (and any test that wants the whole agent in-process) calls.
 *
 * ```
 *  API informer ─┐                                   ┌─► PodReconciler ─► executor ─► CRI
 *  manifest dir  ┴► desired-pod store ─► queue ──────┤        │  ▲
 *  PLEG relist ───────────────────────► (per UID) ───┘        ▼  │ lifecycle: admitted … forgotten
 *  periodic resync ─► store.resyncAll                  status manager, backoffs, puller, volumes,
 *                                                      events, start failures, queue failure counts
 * ```
 *
 * Start order: the runtime first (its version goes into the Node), then the Node, then the
 * NodeAgent's live settings (a paused node stays paused across a restart), then the queue's
 * workers, then the sources of events (pod sources, PLEG, resync), so no event is handled before
 * the parts it needs exist. Stop is the reverse and leaves every pod running.
 */
import { connectKube, type KubeClient } from '../kube/client.js';
import { CoreV1Client } from '../kube/core-v1.js';
import type { Logger } from 'pino';
import { createCriClient, type CriClient } from '../cri/grpc-client.js';
import type { RuntimeService, VersionInfo } from '../cri/types.js';
import { createHostInfo, nodeAllocatable as nodeCapacity } from '../controllers/node/host-info.js';
import { AllocatableView, type Reservations } from '../controllers/node/allocatable.js';
import { PullGate, type ImagePullLimits } from '../reconcilers/images/pull-gate.js';
import { crashLoopBackOffPolicy } from '../reconcilers/model/restart-backoff.js';
import { createNodeController, type NodeController, type NodePressure } from '../controllers/node/node-controller.js';
import { buildEvictionManager, hardMemoryReservationBytes, latePressure } from './eviction.js';
import type { EvictionManager } from '../controllers/eviction/eviction-manager.js';
import type { EventRecorder } from '../reconcilers/events/event-recorder.js';
import { formatRuntimeVersion } from '../controllers/node/node-status.js';
import { runtimeReadiness } from '../controllers/node/runtime-readiness.js';
import type { NodeAgentController } from '../controllers/nodeagent/nodeagent-controller.js';
import { createPauseGate } from '../controllers/nodeagent/pause.js';
import { buildNodeAgentController } from '../controllers/nodeagent/start.js';
import type { LiveParts } from '../controllers/nodeagent/targets.js';
import { Pleg } from '../controllers/pleg/pleg.js';
import { RuntimeSightings, type RuntimeSightingsWriter } from '../reconcilers/model/runtime-sightings.js';
import { GcManager } from '../controllers/gc/gc-manager.js';
import { gcPolicyOf } from '../controllers/gc/gc-policy.js';
import { LogRotationManager, type LogRotationPolicy } from '../controllers/logs/log-rotation-manager.js';
import { logSizeBytes, type CrashLoopBackOffSettings, type GcSettings, type ImagePullSettings, type LogRotationSettings, type ReservedResources } from '../controllers/nodeagent/settings.js';
import { createPodSource } from '../controllers/pod-sources/api-source.js';
import { createDesiredPodStore, withoutMirrorPods, type DesiredPodSource, type DesiredPodStore } from '../controllers/pod-sources/pod-store.js';
import { isMirrorPod } from '../controllers/pod-sources/static-pod.js';
import { startResyncLoop, type ResyncLoop } from '../controllers/pod-sources/resync-loop.js';
import { createReconcileQueue, type ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import { createServiceSource, type ServiceSource } from '../controllers/services/service-source.js';
import { createApiRuntimeHandlers } from '../controllers/runtimeclass/api-runtime-handlers.js';
import { createPodHousekeeping } from './removed-pods.js';
import { createPodEventPath } from './pod-events.js';
import type { PeriodicLoop } from '../util/periodic-loop.js';
import { ETC_HOSTS_PATH } from '../reconcilers/dns/pod-dns-configurer.js';
import { ApiEventRecorder } from '../reconcilers/events/api-event-recorder.js';
import { createPullCredentials } from '../reconcilers/images/pull-secrets.js';
import { assemblePodSync, type PodCgroupSettings, type PodSync } from '../reconcilers/pod/pod-sync.js';
import { buildPodCgroupSettings, type EnforcedAllocatable } from './pod-cgroups.js';
import { probeHostSecurity } from '../reconcilers/admission/host-security.js';
import { ContainerReadinessStore } from '../reconcilers/probes/container-readiness.js';
import { StatusManager, podStatusApi } from '../reconcilers/status/status-manager.js';
import { createVolumeManager, createVolumeSourceApi } from '../reconcilers/volumes/index.js';
import type { NodeServer } from '../server/node-server.js';
import { createNodeMetrics, type NodeMetrics } from '../server/node-metrics.js';
import { buildNodeServer } from '../server/start.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { PodKey } from '../util/pod-key.js';
import type { AgentSettings } from './flags.js';
import { buildStaticPods, type StaticPods } from './static-pods.js';

/** The assembled agent, not yet started. */
export interface AssembledAgent {
  readonly store: DesiredPodStore;
  readonly queue: ReconcileQueue;
  readonly podSync: PodSync;
  /** The node's `/metrics` and their recorders (e.g. `evictions` for the eviction manager). */
  readonly metrics: NodeMetrics;
  /** Starts every part in order; resolves once all run. */
  start(): Promise<void>;
  /** Stops every part in reverse order; running pods keep running. */
  stop(): Promise<void>;
}

/** What a test may put in place of the real thing. */
export interface AgentOverrides {
  readonly clock?: Clock;
  readonly kube?: KubeClient;
  readonly cri?: CriClient;
}

/** One client for every API call: a kubeconfig file, or the pod's service account. */
function loadKubeClient(settings: AgentSettings, clock: Clock): KubeClient {
  return connectKube(settings.kubeconfig, clock);
}

/** Waits until the runtime answers `Version`, retrying with capped backoff. */
export async function waitForRuntime(runtime: RuntimeService, logger: Logger, clock: Clock): Promise<VersionInfo> {
  for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      const version = await runtime.version();
      logger.info({ runtime: version.runtimeName, version: version.runtimeVersion, criVersion: version.runtimeApiVersion }, 'container runtime is up');
      return version;
    } catch (error) {
      logger.warn({ err: error, retryInMs: delayMs }, 'container runtime is not answering');
      await new Promise<void>((resolve) => clock.setTimeout(resolve, delayMs));
    }
  }
}

interface Core {
  readonly settings: AgentSettings;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly kube: KubeClient;
  readonly cri: CriClient;
  readonly runtimeVersion: VersionInfo;
  readonly metrics: NodeMetrics;
}

/** The per-pod machinery with its API-facing writers. */
function buildPodSync(
  core: Core,
  parts: {
    store: DesiredPodStore;
    queue: ReconcileQueue;
    enqueue: (key: PodKey, reason: string) => void;
    admission: { isPaused(): boolean };
    services: ServiceSource;
    node: NodeController;
    staticPods: StaticPods | undefined;
    allocatable: AllocatableView;
    pullGate: PullGate;
    cgroups: PodCgroupSettings | undefined;
    sightings: RuntimeSightingsWriter;
  },
): { podSync: PodSync; status: StatusManager; events: EventRecorder } {
  const { settings, logger, clock, kube, cri } = core;
  const api = new CoreV1Client(kube);
  const events = new ApiEventRecorder({ core: api, nodeName: settings.nodeName, clock, logger: logger.child({ component: 'events' }) });
  const volumeApi = createVolumeSourceApi(kube);
  // Probe results: written by the status manager's narrow entry point, read by status generation.
  const probeResults = new ContainerReadinessStore();
  // The status manager retries unwritten statuses on its own loop, through API outages.
  const { staticPods } = parts;
  const status = new StatusManager({
    api: podStatusApi(api),
    clock,
    logger: logger.child({ component: 'status' }),
    readiness: probeResults,
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
    volumes: createVolumeManager({
      rootDir: settings.rootDir,
      api: volumeApi,
      logger,
      nodeAllocatableMemoryBytes: parts.allocatable.memoryBytes,
      nodeAllocatableMilliCpu: parts.allocatable.milliCpu,
    }),
    pullGate: parts.pullGate,
    envApi: volumeApi,
    services: parts.services,
    sightings: parts.sightings,
    runtimeHandlers: createApiRuntimeHandlers(kube),
    credentials: createPullCredentials({ readSecret: (namespace, name) => volumeApi.readSecret(namespace, name), events, logger: logger.child({ component: 'pull-secrets' }) }),
    admission: parts.admission,
    // Admission reads the Node the node controller last wrote (labels, taints, allocatable) and the store's pods.
    nodeObject: parts.node,
    pods: parts.store,
    security: { ...probeHostSecurity(), allowedUnsafeSysctls: settings.allowedUnsafeSysctls, seccompProfileRoot: settings.seccompProfileRoot, seccompDefault: settings.seccompDefault },
    clock,
    logger,
    requestSync: parts.enqueue,
    extraManagers: [{ podForgotten: (key) => { parts.queue.forgetFailures(key.uid); } }],
    podStartMetrics: core.metrics.podStarts,
    ...(parts.cgroups === undefined ? {} : { cgroups: parts.cgroups }),
    lifecycleMetrics: core.metrics.lifecycle,
  });
  return { podSync, status, events };
}

/** The garbage collector: reads the runtime and the store, hands gone pods to the reconciler. */
function buildGc(core: Core, store: DesiredPodStore, enqueue: (key: PodKey, reason: string) => void, podSync: PodSync): GcManager {
  const { settings, cri, clock, logger } = core;
  return new GcManager({
    runtime: cri.runtime,
    images: cri.image,
    nodeName: settings.nodeName,
    podLogDir: settings.podLogDir,
    rootDir: settings.rootDir,
    pods: { has: (uid) => store.get(uid) !== undefined, synced: () => store.synced(), confirmGone: (key) => store.confirmGone(key) },
    onGonePod: enqueue,
    sandboxImage: settings.sandboxImage,
    policy: gcPolicyOf(settings.gc),
    clock,
    logger: logger.child({ component: 'gc' }),
    ...(podSync.cgroups === undefined ? {} : { podCgroups: podSync.cgroups }),
  });
}

/** The rotation policy of a validated `LogRotationSettings` (flags or NodeAgent `spec.logRotation`). */
function logRotationPolicyOf(settings: LogRotationSettings): LogRotationPolicy {
  return { maxSizeBytes: logSizeBytes(settings.containerLogMaxSize), maxFiles: settings.containerLogMaxFiles };
}

/** Container log rotation over this node's running containers. */
function buildLogRotation(core: Core): LogRotationManager {
  const { settings, cri, clock, logger } = core;
  return new LogRotationManager({
    runtime: cri.runtime,
    nodeName: settings.nodeName,
    podLogDir: settings.podLogDir,
    policy: logRotationPolicyOf(settings.logRotation),
    clock,
    logger: logger.child({ component: 'log-rotation' }),
  });
}

/** Where the NodeAgent's `spec.gc`, `spec.logRotation` and `spec.eviction` land. */
function housekeepingTargets(gc: GcManager, logRotation: LogRotationManager, eviction: EvictionManager): Pick<LiveParts, 'gc' | 'logRotation' | 'eviction'> {
  return {
    gc: { setSettings: (s: GcSettings) => { gc.setPolicy(gcPolicyOf(s)); } },
    logRotation: { setSettings: (s: LogRotationSettings) => { logRotation.setPolicy(logRotationPolicyOf(s)); } },
    eviction: { setSettings: (s) => { eviction.setConfig(s); } },
  };
}

/** The desired-pod store over the API source and, with `--pod-manifest-path` / `--manifest-url`, the static sources. */
function buildSources(core: Core, node: NodeController, enqueue: (key: PodKey, reason: string) => void): { store: DesiredPodStore; staticPods: StaticPods | undefined } {
  const { settings, kube, clock, logger } = core;
  const apiSource = createPodSource({ kube, nodeName: settings.nodeName, logger, onPod: enqueue });
  const staticPods = buildStaticPods({
    dir: settings.podManifestPath,
    manifestUrl: settings.manifestUrl,
    nodeName: settings.nodeName,
    core: new CoreV1Client(kube),
    apiSource,
    node: () => node.node(),
    enqueue,
    clock,
    logger,
  });
  // Mirror pods are never run: the store sees the API source without them.
  const sources: DesiredPodSource[] = [withoutMirrorPods(apiSource, isMirrorPod), ...(staticPods?.sources ?? [])];
  return { store: createDesiredPodStore({ sources, notify: enqueue }), staticPods };
}

function reservationsOf(settings: { readonly systemReserved: ReservedResources; readonly kubeReserved: ReservedResources }): Reservations {
  return { systemReserved: settings.systemReserved, kubeReserved: settings.kubeReserved };
}

/** Pull limits of validated image pull settings (flags or NodeAgent `spec.imagePulls`). */
function pullLimitsOf(settings: ImagePullSettings): ImagePullLimits {
  return { concurrency: settings.serializeImagePulls ? 1 : settings.maxParallelImagePulls, qps: settings.registryPullQPS, burst: settings.registryBurst };
}

/** Where the NodeAgent's node-policy settings land: the Node's allocatable, the restart backoff, the pull gate. */
function nodePolicyTargets(node: NodeController, allocatable: EnforcedAllocatable, podSync: PodSync, pullGate: PullGate): Pick<LiveParts, 'node' | 'crashLoopBackOff' | 'imagePulls'> {
  return {
    node: {
      setMaxPods: (n: number) => { node.setMaxPods(n); },
      setReserved: (r: Reservations) => { allocatable.setReservations(r); node.setReserved(r); },
    },
    crashLoopBackOff: { setSettings: (s: CrashLoopBackOffSettings) => { podSync.restartBackoff.setPolicy(crashLoopBackOffPolicy(s.maxContainerRestartPeriodMs)); } },
    imagePulls: { setSettings: (s: ImagePullSettings) => { pullGate.setLimits(pullLimitsOf(s)); } },
  };
}

/** The Node's registration, status and lease, from the agent's settings and the runtime's readiness. */
function buildNodeController(core: Core, readiness: ReturnType<typeof runtimeReadiness>, pressure: NodePressure): NodeController {
  const { settings, kube, runtimeVersion, logger, clock } = core;
  return createNodeController({
    kube,
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    hostInfo: createHostInfo({ rootDir: settings.rootDir }),
    runtime: { version: () => Promise.resolve(runtimeVersion), readiness },
    logger,
    clock,
    maxPods: settings.maxPods,
    reservations: reservationsOf(settings),
    kubeletPort: settings.nodeServer.port,
    labels: settings.nodeLabels,
    taints: settings.registerWithTaints,
    pressure,
  });
}

/** The eviction manager over the runtime's and the host's figures, counting evictions in /metrics. */
function buildEviction(
  core: Core,
  parts: { store: DesiredPodStore; podSync: PodSync; events: EventRecorder; gc: GcManager; enqueue: (key: PodKey, reason: string) => void; node: NodeController },
): EvictionManager {
  const { settings, cri, metrics, clock, logger } = core;
  return buildEvictionManager({
    config: settings.eviction,
    rootDir: settings.rootDir,
    podLogDir: settings.podLogDir,
    cri,
    pods: parts.store,
    podSync: parts.podSync,
    events: parts.events,
    gc: parts.gc,
    enqueue: parts.enqueue,
    refreshNode: () => void parts.node.refreshNow(),
    onEvicted: (signal) => { metrics.evictions.evicted(signal); },
    clock,
    logger: logger.child({ component: 'eviction' }),
  });
}

/** What the node server reads besides its own settings. */
function nodeServerParts(core: Core, store: DesiredPodStore): Omit<Parameters<typeof buildNodeServer>[0], keyof AgentSettings['nodeServer'] | 'metrics'> {
  const { settings, kube, cri, clock, logger } = core;
  return {
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    rootDir: settings.rootDir,
    podLogDir: settings.podLogDir,
    kube,
    pods: store,
    runtime: cri.runtime,
    images: cri.image,
    clock,
    logger: logger.child({ component: 'node-server' }),
  };
}

/** Builds the agent; connects to the runtime first (waits until it answers). */
export async function assembleAgent(settings: AgentSettings, logger: Logger, overrides: AgentOverrides = {}): Promise<AssembledAgent> {
  const clock = overrides.clock ?? systemClock;
  const kube = overrides.kube ?? loadKubeClient(settings, clock);
  // The kubelet's runtime request timeout is 2 min; a minute leaves room for CNI setup on a busy node.
  const metrics = createNodeMetrics({ nodeName: settings.nodeName, clock });
  const cri = overrides.cri ?? createCriClient({ endpoint: settings.criEndpoint, defaultTimeoutMs: 60_000, logger: logger.child({ component: 'cri' }), metrics: metrics.cri });
  const runtimeVersion = await waitForRuntime(cri.runtime, logger, clock);
  const core: Core = { settings, logger, clock, kube, cri, runtimeVersion, metrics };
  const queue = createReconcileQueue({ redisUrl: settings.redisUrl, ...(settings.redisSentinel === undefined ? {} : { sentinel: settings.redisSentinel }), nodeName: settings.nodeName, concurrency: settings.concurrency, logger, metrics: metrics.runs });
  metrics.watchQueue(queue);
  const podEvents = createPodEventPath(queue, logger);
  const { enqueue } = podEvents;
  // What each reconcile reported of the runtime: PLEG drops the echo of the reconciler's own work.
  const sightings = new RuntimeSightings();
  const pleg = new Pleg({ runtime: cri.runtime, nodeName: settings.nodeName, clock, logger: logger.child({ component: 'pleg' }), onPodChanged: enqueue, sightings, runInFlight: (uid) => queue.runInFlight(uid), metrics: metrics.pleg });
  const readiness = runtimeReadiness(cri.runtime, pleg);
  const pressure = latePressure();
  const node = buildNodeController(core, readiness, pressure);
  const { store, staticPods } = buildSources(core, node, enqueue);
  // Service environment variables; a container waits (CreateContainerConfigError) until it synced.
  const services = createServiceSource({ kube, logger, clock });
  // The NodeAgent's spec.paused closes this gate; reopening it resyncs so held pods start at once.
  const pause = createPauseGate({ onResume: () => { store.resyncAll(); }, logger: logger.child({ component: 'nodeagent' }) });
  // The per-pod default allocatable: capacity less the flags' hard memory threshold, less reservations (live).
  const allocatable = new AllocatableView(nodeCapacity(undefined, hardMemoryReservationBytes(settings.eviction)), reservationsOf(settings));
  const pullGate = new PullGate(pullLimitsOf(settings.imagePulls), clock);
  const podCgroups = await buildPodCgroupSettings(settings.cgroups, reservationsOf(settings));
  const { podSync, status, events } = buildPodSync(core, { store, queue, enqueue, admission: pause, services, node, staticPods, allocatable, pullGate, cgroups: podCgroups.cgroups, sightings });
  podEvents.bind({ store, lifecycle: podSync.lifecycle, evictions: podSync.evictions, status });
  const housekeeping = createPodHousekeeping({ forgetRemovedPods: () => podSync.reconciler.forgetRemovedPods((uid) => queue.runInFlight(uid)), clock, logger: logger.child({ component: 'housekeeping' }) });
  const server = await buildNodeServer({ ...settings.nodeServer, ...nodeServerParts(core, store), metrics });
  queue.onResync((cause) => {
    logger.info({ cause }, 'queue may have lost jobs: resyncing every pod');
    store.resyncAll();
    void pleg.relistNow();
  });
  let resync: ResyncLoop | undefined;
  const gc = buildGc(core, store, enqueue, podSync);
  const logRotation = buildLogRotation(core);
  const eviction = buildEviction(core, { store, podSync, events, gc, enqueue, node });
  pressure.bind(eviction);
  const live: LiveParts = {
    ...{ queue, pause, logger, dns: podSync.dns },
    ...housekeepingTargets(gc, logRotation, eviction),
    // The per-pod allocatable defaults and the kubepods limits both follow the reservations.
    ...nodePolicyTargets(node, { setReservations: (r) => { allocatable.setReservations(r); podCgroups.enforced.setReservations(r); } }, podSync, pullGate),
    resync: { setPeriodMs: (ms: number) => { resync?.setPeriodMs(ms); } },
  };

  const nodeAgent = buildNodeAgentController({
    kube,
    nodeName: settings.nodeName,
    flags: settings,
    live,
    health: { runtimeReadiness: readiness, runtimeVersion: formatRuntimeVersion(runtimeVersion), queue, source: store, node, pleg },
    clock,
    logger,
  });
  const start = async (): Promise<void> => {
    // The first resync is one period from now; created first so a NodeAgent period applies to it.
    resync = startResyncLoop({ resyncAll: () => { store.resyncAll(); }, periodMs: settings.resyncPeriodMs, clock, logger: logger.child({ component: 'resync' }) });
    node.start();
    status.start();
    // Before any pod is reconciled: a NodeAgent paused before this restart holds pods from the
    // first reconcile on (gives up after a few seconds when the NodeAgent cannot be read).
    await nodeAgent.start();
    // The queue's signal (lost lock, shutdown) reaches the reconcile, the executor and every CRI call.
    // Before the pods: their containers' environments need the services listed once.
    await services.start();
    // Before any pod: sandboxes are created under kubepods.
    await podSync.cgroups?.start();
    await queue.start(podSync.reconciler);
    await store.start();
    staticPods?.mirrors.start();
    // After the store: /pods and the logs routes answer from it.
    await server.start();
    pleg.start();
    housekeeping.start();
    gc.start();
    logRotation.start();
    eviction.start();
    nodeAgent.startReporting();
    logger.info({ node: settings.nodeName, concurrency: settings.concurrency }, 'nodelet agent started');
  };
  const stop = async (): Promise<void> => {
    await staticPods?.mirrors.stop();
    await stopAll({ server, nodeAgent, resync, pleg, housekeeping, gc, logRotation, eviction, store, queue, node, status, cri, prober: podSync.prober });
    services.stop();
    logger.info('nodelet agent stopped; pods keep running');
  };
  return { store, queue, podSync, metrics, start, stop };
}

async function stopAll(parts: {
  server: NodeServer;
  nodeAgent: NodeAgentController;
  resync: ResyncLoop | undefined;
  pleg: Pleg;
  housekeeping: PeriodicLoop;
  gc: GcManager;
  logRotation: LogRotationManager;
  eviction: EvictionManager;
  store: DesiredPodStore;
  queue: ReconcileQueue;
  node: NodeController;
  status: StatusManager;
  cri: CriClient;
  prober: { stopAll(): Promise<void> };
}): Promise<void> {
  // First: open log followers end now, not after the parts they read from.
  await parts.server.stop();
  await parts.nodeAgent.stop();
  parts.resync?.stop();
  await parts.pleg.stop();
  await parts.housekeeping.stop();
  // Before GC: a round in flight may still ask GC to reclaim.
  await parts.eviction.stop();
  await parts.gc.stop();
  await parts.logRotation.stop();
  parts.store.stop();
  await parts.queue.close();
  await parts.prober.stopAll();
  await parts.status.stop();
  await parts.node.stop();
  parts.cri.close();
}
