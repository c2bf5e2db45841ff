/**
 * Builds the NodeAgent controller from the agent's parts: its API client, where each live setting
 * lands, and how health is sampled. The agent starts it (`start()`, awaited) before reconciling any
 * pod, and starts its reporting once every sampled part runs.
 */
import type { KubeClient } from '../../kube/client.js';
import type { Logger } from 'pino';
import { agentVersion } from '../node/agent-version.js';
import type { Clock } from '../../util/clock.js';
import { createNodeAgentApi } from './api.js';
import { createNodeAgentController, type NodeAgentController } from './nodeagent-controller.js';
import { createHealthSampler } from './health-probes.js';
import type { EvictionConfig } from '../eviction/thresholds.js';
import { SPEC_LOG_LEVELS, type BaseSettings, type GcSettings, type ImagePullSettings, type LogLevel, type LogRotationSettings, type ReservedResources } from './settings.js';
import type { Readiness } from './status.js';
import { createSettingsTargets, type LiveParts } from './targets.js';
import type { PodSource } from '../pod-sources/api-source.js';
import type { QueueCounts } from '../queue/reconcile-queue.js';

/** The agent's flag values an unset spec field falls back to. */
export interface AgentFlags {
  readonly concurrency: number;
  readonly resyncPeriodMs: number;
  readonly maxPods: number;
  readonly logLevel: string;
  /** `--cluster-dns`. */
  readonly clusterDns?: readonly string[];
  /** `--cluster-domain`. */
  readonly clusterDomain?: string;
  /** The GC flags. */
  readonly gc?: GcSettings;
  /** `--container-log-max-size`, `--container-log-max-files`. */
  readonly logRotation?: LogRotationSettings;
  /** `--system-reserved`, `--kube-reserved`. */
  readonly systemReserved?: ReservedResources;
  readonly kubeReserved?: ReservedResources;
  /** `--serialize-image-pulls`, `--max-parallel-image-pulls`, `--registry-qps`, `--registry-burst`. */
  readonly imagePulls?: ImagePullSettings;
  /** The `--eviction-*` flags. */
  readonly eviction?: EvictionConfig;
}

/** Options of {@link buildNodeAgentController}. */
export interface NodeAgentPartsOptions {
  readonly kube: KubeClient;
  readonly nodeName: string;
  readonly flags: AgentFlags;
  /** Where settings land (queue, resync loop, node controller, pause gate, root logger). */
  readonly live: LiveParts;
  /** What health is sampled from. */
  readonly health: {
    readonly runtimeReadiness: () => Promise<Readiness>;
    readonly runtimeVersion: string;
    /** The queue's counts for a sample: one Redis command when nothing changed (`ReconcileQueue.sampleCounts`). */
    readonly queue: { sampleCounts(): Promise<QueueCounts> };
    readonly source: Pick<PodSource, 'list' | 'healthy'>;
    readonly node: { healthy(): boolean };
    readonly pleg: { lastRelistMs(): number };
  };
  readonly clock: Clock;
  readonly logger: Logger;
}

const FLAG_LOG_LEVELS: readonly LogLevel[] = [...SPEC_LOG_LEVELS, 'fatal', 'silent'];

/** The flags as the settings' base; a log level the spec cannot name (`fatal`, `silent`) is kept as is. */
export function baseSettingsOf(flags: AgentFlags): BaseSettings {
  return {
    workerConcurrency: flags.concurrency,
    resyncPeriodSeconds: Math.round(flags.resyncPeriodMs / 1000),
    maxPods: flags.maxPods,
    logLevel: FLAG_LOG_LEVELS.find((level) => level === flags.logLevel) ?? 'info',
    ...(flags.clusterDns === undefined ? {} : { clusterDNS: flags.clusterDns }),
    ...(flags.clusterDomain === undefined ? {} : { clusterDomain: flags.clusterDomain }),
    ...(flags.gc === undefined ? {} : { gc: flags.gc }),
    ...(flags.logRotation === undefined ? {} : { logRotation: flags.logRotation }),
    ...(flags.systemReserved === undefined ? {} : { systemReserved: flags.systemReserved }),
    ...(flags.kubeReserved === undefined ? {} : { kubeReserved: flags.kubeReserved }),
    ...(flags.imagePulls === undefined ? {} : { imagePulls: flags.imagePulls }),
    ...(flags.eviction === undefined ? {} : { eviction: flags.eviction }),
  };
}

/** Creates the controller, stopped; stop it first when the agent stops. */
export function buildNodeAgentController(options: NodeAgentPartsOptions): NodeAgentController {
  const { health, clock } = options;
  return createNodeAgentController({
    api: createNodeAgentApi(options.kube),
    nodeName: options.nodeName,
    base: baseSettingsOf(options.flags),
    targets: createSettingsTargets(options.live),
    sample: createHealthSampler({
      runtimeReadiness: health.runtimeReadiness,
      runtimeVersion: () => health.runtimeVersion,
      queueCounts: () => health.queue.sampleCounts(),
      pods: () => health.source.list(),
      podSourceHealthy: () => health.source.healthy(),
      nodeHealthy: () => health.node.healthy(),
      lastRelistMs: () => health.pleg.lastRelistMs(),
      clock,
    }),
    agentVersion: agentVersion(),
    clock,
    logger: options.logger,
  });
}
