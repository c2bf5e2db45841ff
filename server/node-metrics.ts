/**
 * The node's `/metrics`: the kubelet's metrics where nodelet does the same work (names, types,
 * labels, buckets and help as Kubernetes v1.37.2's pkg/kubelet/metrics/metrics.go, its server's
 * `kubelet_http_*`, client-go's `rest_client_*` and component-base's build and feature families,
 * help prefixed `[ALPHA]`/`[BETA]` as component-base writes it), and nodelet's own for its queue.
 * Each part of the agent gets only its narrow recorder (`cri`, `pleg`, `runs`, `podStarts`, `pods`,
 * `evictions`, `lifecycle`, `restClient`, `http`, `nodeStartup`, …); nothing here is global, so
 * lower layers never import it. What the kubelet exports and nodelet does not, and why:
 * docs/node-server.md ("Families of the kubelet's /metrics that nodelet does not export").
 */
import type { QueueCounts } from '../controllers/queue/reconcile-queue.js';
import type { ReconcileRunMetrics } from '../controllers/queue/runner.js';
import type { PlegMetrics } from '../controllers/pleg/pleg.js';
import type { CriMetrics } from '../cri/operation-metrics.js';
import type { LifecycleMetrics } from '../reconcilers/hooks/run-hook.js';
import type { UserNamespacedPodMetrics } from '../reconcilers/runtime/execute-pod-actions.js';
import type { ImageVolumeMetrics } from '../reconcilers/runtime/image-volumes.js';
import type { PodStartMetrics } from '../reconcilers/status/pod-start-tracker.js';
import type { Clock } from '../util/clock.js';
import { DEFAULT_BUCKETS, MetricsRegistry, exponentialBuckets } from '../util/metrics.js';
import { withTimeout } from '../util/timeout.js';
import { registerProcessMetrics } from './process-metrics.js';
import { createProbeMetrics, type ProbeMetricsExposition } from './probe-metrics.js';
import type { PreemptionMetrics } from '../reconcilers/admission/preemption.js';
import type { GracefulShutdownMetrics } from '../controllers/shutdown/node-shutdown-manager.js';
import type { ImageGcMetrics } from '../controllers/gc/gc-manager.js';
import type { NodeStartupMetrics } from '../controllers/node/registration.js';
import type { KubeRequestMetrics } from '../kube/transport.js';
import { registerBuildInfo, type BuildInfo } from './build-info-metrics.js';
import { httpMetrics, type NodeHttpMetrics } from './http-metrics.js';
import { storageMetrics, type StorageMetrics } from './storage-metrics.js';
import { nodeStartupMetrics } from './node-startup-metrics.js';
import { podFlowMetrics, watchPodCounts, type PodCountsView, type PodFlowMetrics } from './pod-metrics.js';
import { restClientMetrics } from './rest-client-metrics.js';

/** The kubelet's pod startup buckets (seconds). */
export const POD_START_BUCKETS: readonly number[] = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600];

/** The kubelet's runtime operation buckets: 5 ms × 2.5ⁿ, 14 of them (up to ~12 min). */
export const RUNTIME_OPERATION_BUCKETS: readonly number[] = exponentialBuckets(0.005, 2.5, 14);

/**
 * How long a scrape waits for the queue's depth. With Redis down, a read retries for seconds;
 * a scraper (10 s timeout by default) should get the rest of the figures instead of nothing.
 */
export const QUEUE_READ_TIMEOUT_MS = 2_000;

/** Counts the pods this node evicted (`kubelet_evictions`, by the signal that caused it: `memory.available`, `nodefs.available`, …). */
export interface EvictionMetrics {
  evicted(signal: string): void;
}

/** The node's metrics and the recorders that feed them. */
export interface NodeMetrics {
  readonly cri: CriMetrics;
  readonly pleg: PlegMetrics;
  readonly runs: ReconcileRunMetrics;
  readonly podStarts: PodStartMetrics;
  readonly evictions: EvictionMetrics;
  /** HTTPS lifecycle hooks that fell back to HTTP (`kubelet_lifecycle_handler_http_fallbacks_total`). */
  readonly lifecycle: LifecycleMetrics;
  /** `hostUsers: false` pods started and failed (`kubelet_started_user_namespaced_pods_total`, `…_errors_total`). */
  readonly userNamespacedPods: UserNamespacedPodMetrics;
  /** Image volumes asked for, mounted and failed (`kubelet_image_volume_requested_total`, `…_mounted_succeed_total`, `…_mounted_errors_total`). */
  readonly imageVolumes: ImageVolumeMetrics;
  /** Pods preempted for critical pods (`kubelet_preemptions`, by `preemption_signal`). */
  readonly preemptions: PreemptionMetrics;
  /** The last graceful node shutdown's start and end (`kubelet_graceful_shutdown_start_time_seconds`, `…_end_time_seconds`). */
  readonly gracefulShutdown: GracefulShutdownMetrics;
  /** Images removed by image GC (`kubelet_image_garbage_collected_total`, by `reason`: `age` or `space`). */
  readonly imageGc: ImageGcMetrics;
  /** The API client's requests (`rest_client_*`), handed to `kube/` when the client is built. */
  readonly restClient: KubeRequestMetrics;
  /** The node server's requests (`kubelet_http_*`). */
  readonly http: NodeHttpMetrics;
  /** Directory walks, container log usage and cgroup manager operations (`storage-metrics.ts`). */
  readonly storage: StorageMetrics;
  /** Registration and the first Ready status (`kubelet_node_startup_*`). */
  readonly nodeStartup: NodeStartupMetrics;
  /** Pods started, orphans found, containers per pod, status sync latency (`pod-metrics.ts`). */
  readonly pods: PodFlowMetrics;
  /** Reads the pod counts (`kubelet_desired_pods`, `…_active_pods`, `…_working_pods`, …) from `view` at every scrape. */
  watchPods(view: PodCountsView): void;
  /** Reads the number of image pulled records on disk (`kubelet_imagemanager_ondisk_pulledrecords`) at every scrape. */
  watchPulledRecords(count: () => Promise<number>): void;
  /** Probe runs for `/metrics/probes` (its own registry, as the kubelet's). */
  readonly probes: ProbeMetricsExposition;
  /** Reads the queue's depth (`nodelet_reconcile_queue_jobs`) at every scrape, waiting at most {@link QUEUE_READ_TIMEOUT_MS}. */
  watchQueue(queue: { counts(): Promise<QueueCounts> }): void;
  /** The exposition; a collector that fails (Redis down) leaves its gauges at their last values and is reported to `onError`. */
  expose(onError?: (error: unknown) => void): Promise<string>;
  /** Every family `/metrics` can show, series or not: those of events that have not happened yet show once they do. */
  familyNames(): readonly string[];
}

const alpha = (help: string): string => `[ALPHA] ${help}`;

/** The families of the runtime operation metrics and their recorder. */
function criMetrics(registry: MetricsRegistry): CriMetrics {
  const labelNames = ['operation_type'];
  const total = registry.counter({ name: 'kubelet_runtime_operations_total', help: alpha('Cumulative number of runtime operations by operation type.'), labelNames });
  const duration = registry.histogram({ name: 'kubelet_runtime_operations_duration_seconds', help: alpha('Duration in seconds of runtime operations. Broken down by operation type.'), labelNames, buckets: RUNTIME_OPERATION_BUCKETS });
  const errors = registry.counter({ name: 'kubelet_runtime_operations_errors_total', help: alpha('Cumulative number of runtime operation errors by operation type.'), labelNames });
  return {
    operation: ({ operation, seconds, failed }) => {
      const labels = { operation_type: operation };
      total.inc(labels);
      duration.observe(labels, seconds);
      if (failed) errors.inc(labels);
    },
  };
}

function plegMetrics(registry: MetricsRegistry): PlegMetrics {
  const duration = registry.histogram({ name: 'kubelet_pleg_relist_duration_seconds', help: alpha('Duration in seconds for relisting pods in PLEG.'), buckets: DEFAULT_BUCKETS });
  const interval = registry.histogram({ name: 'kubelet_pleg_relist_interval_seconds', help: alpha('Interval in seconds between relisting in PLEG.'), buckets: DEFAULT_BUCKETS });
  const pods = registry.gauge({ name: 'kubelet_running_pods', help: alpha('Number of pods that have a running pod sandbox') });
  const containers = registry.gauge({ name: 'kubelet_running_containers', help: alpha('Number of containers currently running'), labelNames: ['container_state'] });
  const lastSeen = registry.gauge({ name: 'kubelet_pleg_last_seen_seconds', help: alpha('Timestamp in seconds when PLEG was last seen active.') });
  // nodelet's PLEG hands every change to the pod event bus, which has no bound and drops nothing:
  // the kubelet's count of events dropped from a full channel stays 0 here, truthfully.
  registry.counter({ name: 'kubelet_pleg_discard_events', help: alpha('The number of discard events in PLEG.') });
  return {
    relisted: ({ durationSeconds, intervalSeconds, counts, startedAtMs }) => {
      duration.observe({}, durationSeconds);
      if (intervalSeconds !== undefined) interval.observe({}, intervalSeconds);
      if (counts === undefined) return;
      // Whole seconds, as the kubelet's `relistTime.Unix()`.
      lastSeen.set({}, Math.floor(startedAtMs / 1000));
      pods.set({}, counts.runningPods);
      for (const [state, n] of Object.entries(counts.containersByState)) containers.set({ container_state: state }, n);
    },
  };
}

function queueMetrics(registry: MetricsRegistry, clock: Clock): { runs: ReconcileRunMetrics; watchQueue: NodeMetrics['watchQueue'] } {
  const duration = registry.histogram({ name: 'nodelet_reconcile_job_duration_seconds', help: 'Duration in seconds of one run of a pod reconcile job, by outcome: success, requeue, error (retried with backoff), terminal, or preempted (cancelled by a newer event, run again at once).', labelNames: ['outcome'], buckets: RUNTIME_OPERATION_BUCKETS });
  const retries = registry.counter({ name: 'nodelet_reconcile_retries_total', help: 'Cumulative number of reconcile runs that failed and were scheduled to run again after a backoff.' });
  const depth = registry.gauge({ name: 'nodelet_reconcile_queue_jobs', help: "Jobs in the node's reconcile queue by state (waiting, active, delayed), as of the agent's last read from Redis: after any job change it saw, and at least every minute.", labelNames: ['state'] });
  return {
    runs: {
      runFinished: ({ outcome, seconds, retry }) => {
        duration.observe({ outcome }, seconds);
        if (retry) retries.inc();
      },
    },
    watchQueue: (queue) => {
      registry.collect(async () => {
        const counts = await withTimeout(queue.counts(), { clock, timeoutMs: QUEUE_READ_TIMEOUT_MS, what: 'the reconcile queue (Redis)' });
        for (const state of ['waiting', 'active', 'delayed'] as const) depth.set({ state }, counts[state]);
      });
    },
  };
}

const beta = (help: string): string => `[BETA] ${help}`;

/** The kubelet's image volume counters (BETA in its metrics.go). */
function imageVolumeMetrics(registry: MetricsRegistry): ImageVolumeMetrics {
  const requested = registry.counter({ name: 'kubelet_image_volume_requested_total', help: beta('Number of requested image volumes.') });
  const succeeded = registry.counter({ name: 'kubelet_image_volume_mounted_succeed_total', help: beta('Number of successful image volume mounts.') });
  const failed = registry.counter({ name: 'kubelet_image_volume_mounted_errors_total', help: beta('Number of failed image volume mounts.') });
  return {
    requested: (count) => { requested.inc({}, count); },
    mounted: (count) => { succeeded.inc({}, count); },
    mountFailed: (count) => { failed.inc({}, count); },
  };
}

/** The kubelet registers both whenever graceful shutdown's gates are on (their default), at 0 until a shutdown. */
function gracefulShutdownMetrics(registry: MetricsRegistry): GracefulShutdownMetrics {
  const start = registry.gauge({ name: 'kubelet_graceful_shutdown_start_time_seconds', help: alpha('Last graceful shutdown start time since unix epoch in seconds') });
  const end = registry.gauge({ name: 'kubelet_graceful_shutdown_end_time_seconds', help: alpha('Last graceful shutdown end time since unix epoch in seconds') });
  start.set({}, 0);
  end.set({}, 0);
  return { started: (seconds) => { start.set({}, seconds); }, ended: (seconds) => { end.set({}, seconds); } };
}

/** What the registry of one node is built with. */
export interface NodeMetricsOptions {
  readonly nodeName: string;
  readonly clock: Clock;
  /** When the agent started and the host booted (ms since the epoch; boot unknown: no boot-relative figures). Default: now, unknown. */
  readonly startup?: { readonly agentStartMs: number; readonly bootMs: number | undefined };
  /** `kubernetes_build_info`; default: version unknown (`0.0.0`), no commit. */
  readonly build?: BuildInfo;
  /** The host's cgroup version (`kubelet_cgroup_version`); absent: not known, the family is left out. */
  readonly cgroupVersion?: 1 | 2;
}

/** Builds the registry of one node. */
export function createNodeMetrics(options: NodeMetricsOptions): NodeMetrics {
  const registry = new MetricsRegistry();
  const now = (): number => options.clock.now();
  const startup = options.startup ?? { agentStartMs: now(), bootMs: undefined };
  registerBuildInfo(registry, options.build ?? { packageVersion: '0.0.0', gitCommit: '' });
  if (options.cgroupVersion !== undefined) registry.gauge({ name: 'kubelet_cgroup_version', help: alpha('cgroup version on the hosts.') }).set({}, options.cgroupVersion);
  // nodelet's container and pod stats come from the runtime's CRI stats calls, never from cAdvisor.
  registry.gauge({ name: 'kubelet_metrics_provider', help: alpha("Metrics provider used by kubelet to collect container stats. Values can be 'cadvisor' and 'cri'"), labelNames: ['provider'] }).set({ provider: 'cri' }, 1);
  registry.gauge({ name: 'kubelet_node_name', help: alpha("The node's name. The count is always 1."), labelNames: ['node'] }).set({ node: options.nodeName }, 1);
  const podStart = registry.histogram({ name: 'kubelet_pod_start_duration_seconds', help: alpha('Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run'), buckets: POD_START_BUCKETS });
  const evictions = registry.counter({ name: 'kubelet_evictions', help: alpha('Cumulative number of pod evictions by eviction signal'), labelNames: ['eviction_signal'] });
  const httpFallbacks = registry.counter({ name: 'kubelet_lifecycle_handler_http_fallbacks_total', help: alpha('The number of times lifecycle handlers successfully fell back to http from https.') });
  const sleepsEndedEarly = registry.counter({ name: 'kubelet_sleep_action_terminated_early_total', help: alpha('The number of times lifecycle sleep handler got terminated before it finishes') });
  const usernsStarted = registry.counter({ name: 'kubelet_started_user_namespaced_pods_total', help: alpha('Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.') });
  const usernsErrors = registry.counter({ name: 'kubelet_started_user_namespaced_pods_errors_total', help: alpha('Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.') });
  const imageVolumes = imageVolumeMetrics(registry);
  const preemptions = registry.counter({ name: 'kubelet_preemptions', help: alpha('Cumulative number of pod preemptions by preemption resource'), labelNames: ['preemption_signal'] });
  const gracefulShutdown = gracefulShutdownMetrics(registry);
  const imagesCollected = registry.counter({ name: 'kubelet_image_garbage_collected_total', help: alpha('Total number of images garbage collected by the kubelet, whether through disk usage or image age.'), labelNames: ['reason'] });
  const queue = queueMetrics(registry, options.clock);
  registerProcessMetrics(registry);
  return {
    cri: criMetrics(registry),
    pleg: plegMetrics(registry),
    runs: queue.runs,
    podStarts: { podStarted: (seconds) => { podStart.observe({}, seconds); } },
    evictions: { evicted: (signal) => { evictions.inc({ eviction_signal: signal }); } },
    lifecycle: { httpFallback: () => { httpFallbacks.inc(); }, sleepTerminatedEarly: () => { sleepsEndedEarly.inc(); } },
    userNamespacedPods: { started: () => { usernsStarted.inc(); }, failed: () => { usernsErrors.inc(); } },
    imageVolumes,
    probes: createProbeMetrics(),
    preemptions: { preempted: (resource) => { preemptions.inc({ preemption_signal: resource }); } },
    gracefulShutdown,
    imageGc: { imageRemoved: (reason) => { imagesCollected.inc({ reason }); } },
    restClient: restClientMetrics(registry),
    http: httpMetrics(registry, now),
    storage: storageMetrics(registry),
    nodeStartup: nodeStartupMetrics(registry, { ...startup, now }),
    pods: podFlowMetrics(registry),
    watchPods: (view) => { watchPodCounts(registry, view); },
    watchPulledRecords: (count) => {
      const records = registry.gauge({ name: 'kubelet_imagemanager_ondisk_pulledrecords', help: alpha('Number of ImagePulledRecords stored on disk.') });
      registry.collect(async () => { records.set({}, await count()); });
    },
    watchQueue: queue.watchQueue,
    expose: (onError) => registry.expose(onError),
    familyNames: () => registry.familyNames(),
  };
}
