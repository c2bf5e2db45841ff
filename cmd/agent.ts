/**
 * Wires the agent together: CRI client, node controller, pod source (informer), reconcile queue,
 * reconciler, PLEG and the periodic resync. Each part is built from the settings and handed its
 * collaborators; nothing here decides anything about pods.
 *
 * Start-up order: runtime first (its version is checked and written into the Node), then the Node,
 * then the NodeAgent's live settings (so a paused node stays paused across a restart), then the
 * queue workers, then the sources of events (informer, PLEG, resync), so no event is handled before
 * the parts it needs exist. Stop is the reverse, and leaves every pod running.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { createCriClient, type CriClient } from '../cri/grpc-client.js';
import type { RuntimeService } from '../cri/types.js';
import { systemClock, type Clock } from '../util/clock.js';
import { createHostInfo } from '../controllers/node/host-info.js';
import { createNodeController, type NodeController } from '../controllers/node/node-controller.js';
import { formatRuntimeVersion, type NodeReadiness } from '../controllers/node/node-status.js';
import type { NodeAgentController } from '../controllers/nodeagent/nodeagent-controller.js';
import { createPauseGate } from '../controllers/nodeagent/pause.js';
import { buildNodeAgentController } from '../controllers/nodeagent/start.js';
import { Pleg } from '../controllers/pleg/pleg.js';
import { createPodSource, type PodSource } from '../controllers/pod-sources/api-source.js';
import { createReconcileQueue, type PodRef, type ReconcileQueue } from '../controllers/queue/reconcile-queue.js';
import { ApiEventRecorder } from '../reconcilers/events/api-event-recorder.js';
import { PodActionsExecutor } from '../reconcilers/execute-pod-actions.js';
import { ImagePuller } from '../reconcilers/images/image-puller.js';
import { PodReconciler, type PodAdmission } from '../reconcilers/pod-reconciler.js';
import { createPullCredentials } from '../reconcilers/images/pull-secrets.js';
import { CONTAINER_RESTART_BACKOFF, RestartBackoff } from '../reconcilers/restart-backoff.js';
import { StatusManager, podStatusApi } from '../reconcilers/status/status-manager.js';
import { ContainerReadinessStore } from '../reconcilers/status/container-readiness.js';
import { createVolumeManager, createVolumeSourceApi } from '../reconcilers/volumes/index.js';
import type { AgentSettings } from './flags.js';
import { startResyncLoop, type ResyncLoop } from '../controllers/pod-sources/resync-loop.js';
import os from 'node:os';

/** A running agent. */
export interface Agent {
  /** Stops watching and reconciling; running pods keep running. */
  stop(): Promise<void>;
}

function loadKubeConfig(settings: AgentSettings): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (settings.kubeconfig === undefined) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromFile(settings.kubeconfig);
  return kubeConfig;
}

/** Waits until the runtime answers `Version`, retrying with capped backoff; returns the runtime's name. */
async function waitForRuntime(runtime: RuntimeService, logger: Logger, clock: Clock): Promise<{ runtimeName: string; runtimeVersion: string }> {
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

/** Runtime readiness as the node reports it: the runtime's own conditions plus PLEG health. */
function runtimeReadiness(runtime: RuntimeService, pleg: Pleg): () => Promise<NodeReadiness> {
  return async () => {
    if (!pleg.healthy()) return { ready: false, reason: 'PLEGNotHealthy', message: 'PLEG is not healthy: the runtime has not been relisted for 3m0s' };
    try {
      const status = await runtime.status();
      const failing = status.conditions.filter((c) => (c.type === 'RuntimeReady' || c.type === 'NetworkReady') && !c.status);
      if (failing.length === 0) return { ready: true, reason: '', message: '' };
      return { ready: false, reason: failing[0]?.reason ?? 'RuntimeNotReady', message: failing.map((c) => `${c.type}=false: ${c.message}`).join('; ') };
    } catch (error) {
      return { ready: false, reason: 'RuntimeUnavailable', message: error instanceof Error ? error.message : String(error) };
    }
  };
}

interface Parts {
  readonly cri: CriClient;
  readonly node: NodeController;
  readonly queue: ReconcileQueue;
  readonly source: PodSource;
  readonly pleg: Pleg;
  readonly resync: ResyncLoop;
  readonly nodeAgent: NodeAgentController;
}

function buildReconciler(settings: AgentSettings, deps: { kubeConfig: KubeConfig; cri: CriClient; source: PodSource; runtimeName: string; admission: PodAdmission; logger: Logger; clock: Clock }): PodReconciler {
  const { kubeConfig, cri, logger, clock } = deps;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const events = new ApiEventRecorder({ core, nodeName: settings.nodeName, clock, logger: logger.child({ component: 'events' }) });
  const volumeApi = createVolumeSourceApi(kubeConfig);
  const volumes = createVolumeManager({ rootDir: settings.rootDir, api: volumeApi, logger });
  const credentials = createPullCredentials({ readSecret: (namespace, name) => volumeApi.readSecret(namespace, name), events, logger: logger.child({ component: 'pull-secrets' }) });
  const puller = new ImagePuller({ images: cri.image, events, clock, credentials });
  const restartBackoff = new RestartBackoff(CONTAINER_RESTART_BACKOFF);
  const executor = new PodActionsExecutor({
    runtime: cri.runtime,
    puller,
    restartBackoff,
    clock,
    volumes,
    envApi: volumeApi,
    events,
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    podLogDir: settings.podLogDir,
    rootDir: settings.rootDir,
    nodeAllocatable: { milliCpu: os.cpus().length * 1000, memoryBytes: os.totalmem() },
    logger: logger.child({ component: 'executor' }),
  });
  // The status manager retries unwritten statuses on its own (unref'd) timer, through API outages.
  // Probe results: written by the status manager's narrow entry point, read by status generation.
  const probeResults = new ContainerReadinessStore();
  const status = new StatusManager({ api: podStatusApi(core), clock, logger: logger.child({ component: 'status' }), readiness: probeResults });
  status.start();
  return new PodReconciler({
    store: deps.source,
    runtime: cri.runtime,
    executor,
    status,
    volumes,
    events,
    restartBackoff,
    puller,
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    runtimeName: deps.runtimeName,
    clock,
    logger: logger.child({ component: 'reconciler' }),
    admission: deps.admission,
    probeResults,
  });
}

/** Enqueue without awaiting: a failure (Redis down) is logged; the resync after reconnect repairs it. */
function enqueuer(queue: ReconcileQueue, logger: Logger): (ref: PodRef, reason: string) => void {
  return (ref, reason) => {
    queue.enqueue(ref, reason).catch((error: unknown) => {
      logger.warn({ err: error, podUID: ref.uid, reason }, 'enqueue failed; the next resync retries');
    });
  };
}

/** Starts the agent. Resolves once every part runs. */
export async function startAgent(settings: AgentSettings, logger: Logger, clock: Clock = systemClock): Promise<Agent> {
  const kubeConfig = loadKubeConfig(settings);
  // The kubelet's runtime request timeout is 2 min; a minute leaves room for CNI setup on a busy node.
  const cri = createCriClient({ endpoint: settings.criEndpoint, defaultTimeoutMs: 60_000, logger: logger.child({ component: 'cri' }) });
  const runtimeVersion = await waitForRuntime(cri.runtime, logger, clock);
  const queue = createReconcileQueue({ redisUrl: settings.redisUrl, nodeName: settings.nodeName, concurrency: settings.concurrency, logger });
  const enqueue = enqueuer(queue, logger);
  const pleg = new Pleg({ runtime: cri.runtime, nodeName: settings.nodeName, clock, logger: logger.child({ component: 'pleg' }), onPodChanged: enqueue });
  const node = createNodeController({
    kubeConfig,
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    hostInfo: createHostInfo({ rootDir: settings.rootDir }),
    runtime: { version: () => Promise.resolve(runtimeVersion), readiness: runtimeReadiness(cri.runtime, pleg) },
    logger,
    clock,
    maxPods: settings.maxPods,
    labels: settings.nodeLabels,
    taints: settings.registerWithTaints,
  });
  node.start();
  const source = createPodSource({ kubeConfig, nodeName: settings.nodeName, logger, onPod: enqueue });
  // The NodeAgent's spec.paused closes this gate; reopening it resyncs so held pods start at once.
  const pause = createPauseGate({ onResume: () => { source.resyncAll(); }, logger: logger.child({ component: 'nodeagent' }) });
  const reconciler = buildReconciler(settings, { kubeConfig, cri, source, runtimeName: runtimeVersion.runtimeName, admission: pause, logger, clock });
  queue.onResync((cause) => {
    logger.info({ cause }, 'queue may have lost jobs: resyncing every pod');
    source.resyncAll();
    void pleg.relist().catch(() => undefined);
  });
  const resync = startResyncLoop({ resyncAll: () => { source.resyncAll(); }, periodMs: settings.resyncPeriodMs, clock });
  const nodeAgent = buildNodeAgentController({
    kubeConfig,
    nodeName: settings.nodeName,
    flags: settings,
    live: { queue, resync, node, pause, logger },
    health: { runtimeReadiness: runtimeReadiness(cri.runtime, pleg), runtimeVersion: formatRuntimeVersion(runtimeVersion), queue, source, node, pleg },
    clock,
    logger,
  });
  // Before any pod is reconciled: a NodeAgent paused before this restart holds pods from the first
  // reconcile on (gives up after a few seconds when the NodeAgent cannot be read).
  await nodeAgent.start();
  await queue.start((ref) => reconciler.reconcile(ref));
  await source.start();
  pleg.start();
  nodeAgent.startReporting();
  logger.info({ node: settings.nodeName, concurrency: settings.concurrency }, 'nodelet agent started');
  return { stop: () => stopParts({ cri, node, queue, source, pleg, resync, nodeAgent }, logger) };
}

async function stopParts(parts: Parts, logger: Logger): Promise<void> {
  await parts.nodeAgent.stop();
  parts.resync.stop();
  parts.pleg.stop();
  parts.source.stop();
  await parts.queue.close();
  await parts.node.stop();
  parts.cri.close();
  logger.info('nodelet agent stopped; pods keep running');
}
