/**
 * The composition root: builds every part of the agent from its settings and hands each part its
 * collaborators. It holds no policy — what a pod event does lives in `controllers/pod-events/`,
 * node readiness in the node controller's folder, pod decisions in the reconcilers, retry policy
 * in the queue — only the wiring, in one place that `cmd/agent.ts` (and any test that wants the
 * whole agent in-process) calls; one builder per subsystem lives in `cmd/assembly/`.
 *
 * ```
 *  API informer ─┐                                              ┌─► PodReconciler ─► executor ─► CRI
 *  manifest dir  ┴► desired-pod store ─┐                        │        │  ▲
 *  PLEG relist ────────────────────────┼► pod event bus ─► dispatcher ─► queue (per UID)
 *  probes, resizer, GC, eviction ──────┘   (built first)   (built last)     lifecycle: admitted … forgotten
 *  periodic resync ─► store.resyncAll                                       status manager, backoffs, puller, volumes, …
 * ```
 *
 * Build order: the pod event bus first (every emitter is built with it), the dispatcher last (it
 * is built with every view its decisions read), so no part is bound late: the Node reads the
 * node's pressure from a state cell made before it, which the eviction manager, built later (it
 * needs the pod machinery, which needs the Node), writes. Start order: the
 * runtime first (its version goes into the Node), then the Node, then the NodeAgent's live
 * settings (a paused node stays paused across a restart), then the queue's workers, then the
 * sources of events (pod sources, PLEG, resync), so no event is handled before the parts it needs
 * exist. Stop is the reverse and leaves every pod running.
 */
import { buildContainerEvents } from './assembly/container-events.js';
import { buildUserNamespaces } from './assembly/user-namespaces.js';
import type { Logger } from 'pino';
import { createCriClient, type CriClient } from '../cri/grpc-client.js';
import type { KubeClient } from '../kube/client.js';
import { agentClients, connectAgentKube, type AgentKube } from './assembly/credentials.js';
import { buildHealthz } from './assembly/healthz.js';
import { buildQueue, resyncOnQueueLoss } from './assembly/queue.js';
import type { EvictionManager } from '../controllers/eviction/eviction-manager.js';
import { NodePressureState } from '../controllers/eviction/node-pressure-state.js';
import type { GcManager } from '../controllers/gc/gc-manager.js';
import type { LogRotationManager } from '../controllers/logs/log-rotation-manager.js';
import { AllocatableView } from '../controllers/node/allocatable.js';
import { nodeAllocatable as nodeCapacity, nodeHostSystem } from '../controllers/node/host-info.js';
import type { NodeController } from '../controllers/node/node-controller.js';
import { formatRuntimeVersion } from '../controllers/node/node-status.js';
import type { NodeAgentController } from '../controllers/nodeagent/nodeagent-controller.js';
import { createPauseGate } from '../controllers/nodeagent/pause.js';
import { buildNodeAgentController } from '../controllers/nodeagent/start.js';
import type { LiveParts } from '../controllers/nodeagent/targets.js';
import { PodEventBus } from '../controllers/pod-events/bus.js';
import { PodEventDispatcher } from '../controllers/pod-events/dispatcher.js';
import { createPodHousekeeping } from '../controllers/pod-events/housekeeping.js';
import { Pleg } from '../controllers/pleg/pleg.js';
import type { DesiredPodStore } from '../controllers/pod-sources/pod-store.js';
import { startResyncLoop, type ResyncLoop } from '../controllers/pod-sources/resync-loop.js';
import type { ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import { createServiceSource } from '../controllers/services/service-source.js';
import { PullGate } from '../reconcilers/images/pull-gate.js';
import { RuntimeSightings } from '../reconcilers/model/runtime-sightings.js';
import type { PodSync } from '../reconcilers/pod/pod-sync.js';
import type { StatusManager } from '../reconcilers/status/status-manager.js';
import type { NodeServer } from '../server/node-server.js';
import { createNodeMetrics, type NodeMetrics } from '../server/node-metrics.js';
import { buildNodeServer } from '../server/start.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { PeriodicLoop } from '../util/periodic-loop.js';
import { waitForRuntime, type AgentCore } from './assembly/core.js';
import { buildEviction } from './assembly/eviction.js';
import { buildNodeShutdown } from './assembly/node-shutdown.js';
import type { NodeShutdownManager } from '../controllers/shutdown/node-shutdown-manager.js';
import { NodeShutdownState } from '../controllers/shutdown/shutdown-state.js';
import { shutdownGroups } from '../controllers/shutdown/shutdown-plan.js';
import { buildGc, buildLogRotation, housekeepingTargets } from './assembly/housekeeping.js';
import { buildNodeController, buildNodeEvents, buildRuntimeReadiness, nodePolicyTargets, pullLimitsOf, reservationsOf } from './assembly/node.js';
import { nodeServerParts } from './assembly/node-server.js';
import { buildPodCgroupSettings } from './assembly/pod-cgroups.js';
import { buildNodeCredentials } from './assembly/node-credentials.js';
import { buildPodSync } from './assembly/pod-sync.js';
import { buildCsiDrivers, buildDeviceManager, buildNodePlugins } from './assembly/devices.js';
import type { NodePlugins } from '../controllers/plugins/node-plugins.js';
import { buildSources } from './assembly/sources.js';
import { nodeMetricsOptions } from './assembly/node-metrics.js';
import type { AgentSettings } from './flags.js';

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

/** Builds the agent; connects to the runtime first (waits until it answers). */
export async function assembleAgent(settings: AgentSettings, logger: Logger, overrides: AgentOverrides = {}): Promise<AssembledAgent> {
  const clock = overrides.clock ?? systemClock;
  // One client for every API call: a kubeconfig file, the pod's service account, or the node's own
  // certificate from a bootstrap credential (a test's client stays the test's to close).
  // A credential provider config the kubelet would refuse stops the agent before it registers.
  const nodeCredentials = await buildNodeCredentials(settings, clock, logger);
  // Made before the API client, which records every request in it (`rest_client_*`).
  const metrics = createNodeMetrics(await nodeMetricsOptions(settings, clock));
  const agentKube: AgentKube = overrides.kube === undefined ? await connectAgentKube(settings, clock, logger, metrics.restClient) : { ...agentClients(overrides.kube, clock), stop: () => undefined };
  const { kube, heartbeatKube, eventKube } = agentKube;
  // The kubelet's runtime request timeout is 2 min; a minute leaves room for CNI setup on a busy node.
  const cri = overrides.cri ?? createCriClient({ endpoint: settings.criEndpoint, defaultTimeoutMs: 60_000, logger: logger.child({ component: 'cri' }), metrics: metrics.cri });
  const runtimeVersion = await waitForRuntime(cri.runtime, logger, clock);
  const core: AgentCore = { settings, logger, clock, kube, heartbeatKube, eventKube, cri, runtimeVersion, metrics };
  const { queue, nodeAnnotations } = await buildQueue(core);
  // Every emitter of pod events is built with the bus; the dispatcher, built last, decides.
  const podEvents = new PodEventBus();
  // What each reconcile reported of the runtime: PLEG drops the echo of the reconciler's own work.
  const sightings = new RuntimeSightings();
  const pleg = new Pleg({ runtime: cri.runtime, nodeName: settings.nodeName, clock, logger: logger.child({ component: 'pleg' }), podEvents, sightings, runInFlight: (uid) => queue.runInFlight(uid), metrics: metrics.pleg });
  const containerEvents = overrides.cri === undefined ? buildContainerEvents(core, pleg) : undefined; // (a test's CRI double has no stream)
  const { readiness, runtimeFeatures } = buildRuntimeReadiness(cri.runtime, pleg);
  // What the Node reports of the eviction manager's conditions and thresholds (the manager writes it).
  const pressure = NodePressureState.of(settings.eviction);
  // Whether the node is shutting down: readiness and admission read it, the shutdown manager (built later) writes it.
  const { shutdownState, nodeEvents } = { shutdownState: new NodeShutdownState(), nodeEvents: buildNodeEvents(core) };
  // The device plugins' allocations, read back from their checkpoint before any pod is admitted; the Node reports their resources.
  const devices = await buildDeviceManager(core);
  // The CSI drivers registered, and the volumes in use the Node's status reads (the volume manager answers once built with the pod sync).
  const { csiDrivers, volumesInUse } = { csiDrivers: buildCsiDrivers(), volumesInUse: { read: (): readonly string[] => [] } };
  const node = buildNodeController(core, { readiness: shutdownState.readiness(readiness), features: runtimeFeatures }, { pressure, annotations: nodeAnnotations, events: nodeEvents, extendedResources: devices, volumesInUse: () => volumesInUse.read() });
  const { store, staticPods } = buildSources(core, node, podEvents);
  // Service environment variables; a container waits (CreateContainerConfigError) until it synced.
  const services = createServiceSource({ kube, logger, clock });
  // The NodeAgent's spec.paused closes this gate; reopening it resyncs so held pods start at once.
  const pause = createPauseGate({ onResume: () => { store.resyncAll(); }, logger: logger.child({ component: 'nodeagent' }) });
  // The per-pod default allocatable: capacity less the flags' hard memory threshold (the pressure cell holds
  // the flags' thresholds until the eviction manager exists), less reservations (live).
  const hardMemoryReservedBytes = pressure.reservedBytes({ memoryBytes: nodeHostSystem.totalMemoryBytes(), ephemeralStorageBytes: 0 }).memoryBytes;
  const allocatable = new AllocatableView(nodeCapacity(undefined, hardMemoryReservedBytes), reservationsOf(settings));
  const pullGate = new PullGate(pullLimitsOf(settings.imagePulls), clock);
  const podCgroups = await buildPodCgroupSettings(settings.cgroups, reservationsOf(settings), cri.runtime, { clock, observe: (op, seconds) => { metrics.storage.cgroupOperated(op, seconds); } });
  const { podSync, status, events, volumes } = buildPodSync(core, { store, queue, podEvents, admission: pause, nodeShutdown: shutdownGroups(settings.shutdown).length > 0 ? shutdownState : undefined, services, node, staticPods, allocatable, pullGate, cgroups: podCgroups.cgroups, sightings, nodeCredentials, runtimeFeatures, userNamespaces: await buildUserNamespaces(core), devices, csiDrivers, onVolumesInUseChanged: () => { void node.refreshNow(); } });
  volumesInUse.read = () => volumes.volumesInUse?.() ?? [];
  const plugins = buildNodePlugins(core, { devices, store, lifecycle: podSync.lifecycle, node, nodeEvents, csiDrivers });
  const housekeeping = createPodHousekeeping({ reconciler: podSync.reconciler, queue, clock, logger: logger.child({ component: 'housekeeping' }) });
  // The pod's probes read it; started first so a slow start shows as not ready, not as a refusal.
  const healthz = buildHealthz(core, { housekeeping, podSource: store, pleg });
  const server = await buildNodeServer({ ...settings.nodeServer, ...nodeServerParts(core, store), metrics });
  resyncOnQueueLoss(queue, { store, pleg, logger });
  let resync: ResyncLoop | undefined;
  const gc = buildGc(core, store, podEvents, podSync);
  const logRotation = buildLogRotation(core);
  const eviction = buildEviction(core, { store, podSync, events, gc, podEvents, node, pressure });
  const nodeShutdown = buildNodeShutdown(core, { state: shutdownState, store, podSync, podEvents, node, nodeEvents });
  const dispatcher = new PodEventDispatcher({ queue, store, lifecycle: podSync.lifecycle, evictions: podSync.evictions, status, logger: logger.child({ component: 'pod-events' }) });
  podEvents.attach((event) => { dispatcher.dispatch(event); });
  const live: LiveParts = {
    ...{ queue, pause, logger, dns: podSync.dns },
    ...housekeepingTargets(gc, logRotation, eviction),
    // The per-pod allocatable defaults and the kubepods limits both follow the reservations.
    ...nodePolicyTargets(node, { setReservations: (r) => { allocatable.setReservations(r); podCgroups.enforced.setReservations(r); } }, podSync, pullGate),
    resync: { setPeriodMs: (ms: number) => { resync?.setPeriodMs(ms); } },
  };

  const nodeAgent = buildNodeAgentController({ kube, nodeName: settings.nodeName, flags: settings, live, clock, logger,
    health: { runtimeReadiness: readiness, runtimeVersion: formatRuntimeVersion(runtimeVersion), queue, source: store, node, pleg } });
  const start = async (): Promise<void> => {
    healthz?.start();
    // The first resync is one period from now; created first so a NodeAgent period applies to it.
    resync = startResyncLoop({ resyncAll: () => { store.resyncAll(); }, periodMs: settings.resyncPeriodMs, clock, logger: logger.child({ component: 'resync' }) });
    node.start();
    status.start();
    // Before any pod is reconciled: a NodeAgent paused before this restart holds pods (read for a few seconds at most).
    await nodeAgent.start();
    // Before the pods: their containers' environments need the services listed once.
    await services.start();
    // Before any pod: sandboxes are created under kubepods.
    // Before the pods too: plugins re-register on the recreated kubelet.sock.
    await Promise.all([podSync.cgroups?.start(), plugins.start()]);
    // The queue's signal (lost lock, shutdown, preemption) reaches the reconcile, the executor and every CRI call.
    await queue.start(podSync.reconciler);
    await store.start();
    staticPods?.mirrors.start();
    // After the store: /pods and the logs routes answer from it.
    await server.start();
    pleg.start();
    containerEvents?.start();
    housekeeping.start();
    healthz?.loopsStarted();
    // Graceful node shutdown last: the host is held once everything that stops pods runs.
    for (const part of [gc, logRotation, eviction, nodeShutdown]) part?.start();
    nodeAgent.startReporting();
    logger.info({ node: settings.nodeName, concurrency: settings.concurrency }, 'nodelet agent started');
  };
  const stop = async (): Promise<void> => {
    await staticPods?.mirrors.stop();
    await containerEvents?.stop();
    await stopAll({ plugins, nodeShutdown, server, nodeAgent, resync, pleg, housekeeping, gc, logRotation, eviction, store, queue, node, status, cri, prober: podSync.prober });
    services.stop();
    agentKube.stop();
    await healthz?.stop();
    logger.info('nodelet agent stopped; pods keep running');
  };
  return { store, queue, podSync, metrics, start, stop };
}

async function stopAll(parts: {
  plugins: NodePlugins;
  nodeShutdown: NodeShutdownManager | undefined;
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
  // First: an agent that stops no longer holds the host's shutdown.
  await parts.nodeShutdown?.stop();
  // Plugins see the registration socket go; their devices stay allocated in the checkpoint.
  await parts.plugins.stop();
  // Open log followers end now, not after the parts they read from.
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
