/**
 * The kubelet's pod counts and pod flows on `/metrics` (pkg/kubelet/metrics, v1.37.2), where
 * nodelet has the same facts:
 *
 * - Counts, read at each scrape from the pod store, the lifecycle kernel, the mirror pod manager and
 *   the resize conditions (the kubelet sets them in `HandlePodCleanups` every 2 s and in its status
 *   manager): `kubelet_desired_pods`, `kubelet_active_pods`, `kubelet_mirror_pods`,
 *   `kubelet_working_pods`, `kubelet_managed_ephemeral_containers`, `kubelet_pod_in_progress_resizes`.
 * - Flows, recorded where they happen: `kubelet_started_pods_total` and `…_errors_total` (a sandbox
 *   created, or its creation failed), `kubelet_orphaned_runtime_pods_total` (a pod found in the
 *   runtime that the lifecycle kernel never knew), `kubelet_restarted_pods_total` (a pod a source
 *   removed and delivered again under the same UID, forgotten to start afresh),
 *   `kubelet_containers_per_pod_count` (a pod's first admission),
 *   `kubelet_pod_status_sync_duration_seconds` (a status from its hand-over to the status manager
 *   until the API holds it).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecyclePhase } from '../reconcilers/lifecycle/pod-lifecycle.js';
import { podQosClass } from '../reconcilers/model/qos.js';
import type { ContainerTypeLabel } from '../reconcilers/runtime/start-container.js';
import type { EnsureImageRequest } from '../reconcilers/images/image-puller.js';
import type { MustPullCheckResult } from '../reconcilers/images/pull-verification.js';
import { DEFAULT_BUCKETS, exponentialBuckets, type MetricsRegistry } from '../util/metrics.js';

/** What one pod the lifecycle kernel holds looks like to the counts. */
export interface WorkingPod {
  readonly uid: string;
  readonly phase: PodLifecyclePhase;
  /** The kernel admitted it once: it came from a pod source (an orphan found in the runtime never was). */
  readonly admitted: boolean;
}

/** Where the counts are read from at each scrape. */
export interface PodCountsView {
  /** The desired pods of every source (mirror pods not included). */
  desired(): readonly V1Pod[];
  /** From a manifest file or URL rather than the API. */
  isStatic(pod: V1Pod): boolean;
  /** A static pod whose mirror pod the API holds. */
  hasMirror(pod: V1Pod): boolean;
  /** The pods the lifecycle kernel holds (the kubelet's pod workers). */
  working(): readonly WorkingPod[];
  /** Pods whose resize is in progress. */
  resizesInProgress(): number;
}

/** The pod flows' recorders, each handed to the part where its event happens; none may throw. */
export interface PodFlowMetrics {
  /** A sandbox is being created for a pod (`kubelet_started_pods_total`). */
  sandboxCreating(): void;
  /** Creating it failed, not by cancellation (`kubelet_started_pods_errors_total`). */
  sandboxFailed(): void;
  /** A pod found in the runtime that no pod source and no earlier run knew (`kubelet_orphaned_runtime_pods_total`). */
  orphanFound(): void;
  /** A pod admitted for the first time (`kubelet_containers_per_pod_count`, `kubelet_pod_level_resources_admission_total`). */
  podAdmitted(pod: V1Pod): void;
  /** A pod forgotten to run afresh under the same UID, static or not (`kubelet_restarted_pods_total`). */
  podRestarted(isStatic: boolean): void;
  /** A container is being started, past its restart backoff (`kubelet_started_containers_total`). */
  containerStarting(containerType: ContainerTypeLabel): void;
  /** Starting it failed, with the kubelet's reason (`kubelet_started_containers_errors_total`). */
  containerFailed(containerType: ContainerTypeLabel, code: string): void;
  /** A container's status turned terminated (`kubelet_terminated_containers_total`). */
  containerTerminated(termination: { readonly containerType: ContainerTypeLabel; readonly exitCode: number; readonly reason: string }): void;
  /** One RunPodSandbox call, by the pod's runtime handler (`kubelet_run_podsandbox_duration_seconds`, `…_errors_total`). */
  sandboxRun(run: { readonly runtimeHandler: string; readonly seconds: number; readonly failed: boolean }): void;
  /** One ensure-image request (`kubelet_image_manager_ensure_image_requests_total`). */
  ensured(request: EnsureImageRequest): void;
  /** One check of a present image's pulled record (`kubelet_imagemanager_image_mustpull_checks_total`). */
  mustPullChecked(result: MustPullCheckResult): void;
  /** A pod status reached the API `seconds` after it was handed over (`kubelet_pod_status_sync_duration_seconds`). */
  statusSynced(seconds: number): void;
}

const alpha = (help: string): string => `[ALPHA] ${help}`;
const staticLabel = (isStatic: boolean): string => (isStatic ? 'true' : '');
const LIFECYCLE_LABEL: Readonly<Record<PodLifecyclePhase, string>> = { syncing: 'sync', terminating: 'terminating', terminated: 'terminated' };

/**
 * How a pod sets its resources, as the kubelet's `recordPodLevelResourcesAdmission`: pod-level
 * (CPU or memory in `spec.resources`), container-level (any requests or limits on a container or
 * init container), both, or `''` for neither. Pure.
 */
export function resourceConfigMode(pod: V1Pod): string {
  const podLevel = [pod.spec?.resources?.requests, pod.spec?.resources?.limits].some((list) => Object.keys(list ?? {}).some((name) => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-')));
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const containerLevel = containers.some((c) => Object.keys(c.resources?.requests ?? {}).length > 0 || Object.keys(c.resources?.limits ?? {}).length > 0);
  if (podLevel && containerLevel) return 'pod_and_container_level';
  if (podLevel) return 'pod_level';
  return containerLevel ? 'container_level' : '';
}

/** The kubelet's status sync buckets (seconds). */
export const POD_STATUS_SYNC_BUCKETS: readonly number[] = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30, 45, 60];

/** The `kubelet_working_pods` series: every valid combination, 0 when none (as the kubelet sets them). */
function workingSeries(): Map<string, { lifecycle: string; config: string; static: string; n: number }> {
  const series = new Map<string, { lifecycle: string; config: string; static: string; n: number }>();
  const configs: readonly (readonly [string, string])[] = [['desired', ''], ['desired', 'true'], ['orphan', ''], ['orphan', 'true'], ['runtime_only', 'unknown']];
  for (const lifecycle of Object.values(LIFECYCLE_LABEL)) for (const [config, isStatic] of configs) series.set(`${lifecycle}/${config}/${isStatic}`, { lifecycle, config, static: isStatic, n: 0 });
  return series;
}

/**
 * Counts the working pods. A pod still desired is `desired`; one gone from every source is an
 * `orphan` when it was admitted, else `runtime_only`. Whether an orphan was static is remembered
 * from the scrapes that saw it desired (`staticSeen`), as the kubelet's pod worker keeps its pod.
 */
export function countWorkingPods(view: Pick<PodCountsView, 'working'>, desired: ReadonlyMap<string, boolean>, staticSeen: ReadonlyMap<string, boolean>): Map<string, { lifecycle: string; config: string; static: string; n: number }> {
  const series = workingSeries();
  for (const pod of view.working()) {
    const isStatic = desired.get(pod.uid) ?? staticSeen.get(pod.uid);
    const config = desired.has(pod.uid) ? 'desired' : pod.admitted ? 'orphan' : 'runtime_only';
    const label = config === 'runtime_only' ? 'unknown' : staticLabel(isStatic === true);
    const entry = series.get(`${LIFECYCLE_LABEL[pod.phase]}/${config}/${label}`);
    if (entry !== undefined) entry.n += 1;
  }
  return series;
}

/** The desired and active pods (index 0: from the API, 1: static), mirror pods and ephemeral containers. Pure. */
export function countDesiredPods(pods: readonly V1Pod[], view: Pick<PodCountsView, 'isStatic' | 'hasMirror'>, phases: ReadonlyMap<string, PodLifecyclePhase>): { desired: [number, number]; active: [number, number]; mirrors: number; ephemeral: number } {
  const counts = { desired: [0, 0] as [number, number], active: [0, 0] as [number, number], mirrors: 0, ephemeral: 0 };
  for (const pod of pods) {
    const isStatic = view.isStatic(pod);
    const i = isStatic ? 1 : 0;
    counts.desired[i] += 1;
    // Active, as the kubelet's filterOutInactivePods: not in a terminal phase, not terminated here.
    const phase = pod.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed' && phases.get(pod.metadata?.uid ?? '') !== 'terminated') counts.active[i] += 1;
    if (isStatic && view.hasMirror(pod)) counts.mirrors += 1;
    counts.ephemeral += pod.spec?.ephemeralContainers?.length ?? 0;
  }
  return counts;
}

/** Registers the count families, refreshed from `view` before each scrape. */
export function watchPodCounts(registry: MetricsRegistry, view: PodCountsView): void {
  const desiredPods = registry.gauge({ name: 'kubelet_desired_pods', help: alpha('The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.'), labelNames: ['static'] });
  const activePods = registry.gauge({ name: 'kubelet_active_pods', help: alpha('The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.'), labelNames: ['static'] });
  const mirrorPods = registry.gauge({ name: 'kubelet_mirror_pods', help: alpha('The number of mirror pods the kubelet will try to create (one per admitted static pod)') });
  const workingPods = registry.gauge({ name: 'kubelet_working_pods', help: alpha('Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.'), labelNames: ['config', 'lifecycle', 'static'] });
  const ephemeral = registry.gauge({ name: 'kubelet_managed_ephemeral_containers', help: alpha('Current number of ephemeral containers in pods managed by this kubelet.') });
  const resizes = registry.gauge({ name: 'kubelet_pod_in_progress_resizes', help: alpha('Number of in-progress resizes for pods.') });
  // Whether each working pod was static, kept while the kernel holds it (it may leave every source first).
  let staticSeen = new Map<string, boolean>();
  registry.collect(() => {
    const pods = view.desired();
    const working = view.working();
    const desired = new Map(pods.map((p) => [p.metadata?.uid ?? '', view.isStatic(p)]));
    const counts = countDesiredPods(pods, view, new Map(working.map((w) => [w.uid, w.phase])));
    for (const [i, label] of [[0, ''], [1, 'true']] as const) {
      desiredPods.set({ static: label }, counts.desired[i]);
      activePods.set({ static: label }, counts.active[i]);
    }
    mirrorPods.set({}, counts.mirrors);
    ephemeral.set({}, counts.ephemeral);
    resizes.set({}, view.resizesInProgress());
    for (const entry of countWorkingPods({ working: () => working }, desired, staticSeen).values()) workingPods.set({ lifecycle: entry.lifecycle, config: entry.config, static: entry.static }, entry.n);
    staticSeen = new Map(working.flatMap((w) => {
      const isStatic = desired.get(w.uid) ?? staticSeen.get(w.uid);
      return isStatic === undefined ? [] : [[w.uid, isStatic] as const];
    }));
    return Promise.resolve();
  });
}

/** The container start and termination families and the sandbox runs, by the kubelet's labels. */
function containerFlowMetrics(registry: MetricsRegistry): Pick<PodFlowMetrics, 'containerStarting' | 'containerFailed' | 'containerTerminated' | 'sandboxRun'> {
  const started = registry.counter({ name: 'kubelet_started_containers_total', help: alpha('Cumulative number of containers started'), labelNames: ['container_type'] });
  const failed = registry.counter({ name: 'kubelet_started_containers_errors_total', help: alpha('Cumulative number of errors when starting containers'), labelNames: ['code', 'container_type'] });
  const terminated = registry.counter({ name: 'kubelet_terminated_containers_total', help: alpha('Cumulative number of container terminations.'), labelNames: ['container_type', 'exit_code', 'reason'] });
  const sandboxDuration = registry.histogram({ name: 'kubelet_run_podsandbox_duration_seconds', help: alpha('Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.'), labelNames: ['runtime_handler'], buckets: DEFAULT_BUCKETS });
  const sandboxErrors = registry.counter({ name: 'kubelet_run_podsandbox_errors_total', help: alpha('Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.'), labelNames: ['runtime_handler'] });
  return {
    containerStarting: (type) => { started.inc({ container_type: type }); },
    containerFailed: (type, code) => { failed.inc({ code, container_type: type }); },
    containerTerminated: ({ containerType, exitCode, reason }) => { terminated.inc({ container_type: containerType, exit_code: String(exitCode), reason }); },
    sandboxRun: ({ runtimeHandler, seconds, failed: runFailed }) => {
      sandboxDuration.observe({ runtime_handler: runtimeHandler }, seconds);
      if (runFailed) sandboxErrors.inc({ runtime_handler: runtimeHandler });
    },
  };
}

/** The image manager's requests and pulled-record checks, by the kubelet's labels. */
function imageFlowMetrics(registry: MetricsRegistry): Pick<PodFlowMetrics, 'ensured' | 'mustPullChecked'> {
  const requests = registry.counter({ name: 'kubelet_image_manager_ensure_image_requests_total', help: alpha('Number of ensure-image requests processed by the kubelet.'), labelNames: ['present_locally', 'pull_policy', 'pull_required'] });
  const checks = registry.counter({ name: 'kubelet_imagemanager_image_mustpull_checks_total', help: alpha('Counter for how many times kubelet checked whether credentials need to be re-verified to access an image'), labelNames: ['result'] });
  const known = (value: boolean | undefined): string => (value === undefined ? 'unknown' : String(value));
  return {
    ensured: ({ pullPolicy, presentLocally, pullRequired }) => {
      requests.inc({ present_locally: known(presentLocally), pull_policy: pullPolicy.toLowerCase(), pull_required: known(pullRequired) });
    },
    mustPullChecked: (result) => { checks.inc({ result }); },
  };
}

/** Registers the flow families and returns their recorders. */
export function podFlowMetrics(registry: MetricsRegistry): PodFlowMetrics {
  const started = registry.counter({ name: 'kubelet_started_pods_total', help: alpha('Cumulative number of pods started') });
  const startErrors = registry.counter({ name: 'kubelet_started_pods_errors_total', help: alpha('Cumulative number of errors when starting pods') });
  const restarted = registry.counter({ name: 'kubelet_restarted_pods_total', help: alpha('Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)'), labelNames: ['static'] });
  // Both series from the start, as the kubelet adds its two counts (0 or more) at every housekeeping.
  restarted.inc({ static: staticLabel(true) }, 0);
  restarted.inc({ static: staticLabel(false) }, 0);
  const orphans = registry.counter({ name: 'kubelet_orphaned_runtime_pods_total', help: alpha('Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual.') });
  const containers = registry.histogram({ name: 'kubelet_containers_per_pod_count', help: alpha('The number of containers per pod.'), buckets: exponentialBuckets(1, 2, 5) });
  const statusSync = registry.histogram({ name: 'kubelet_pod_status_sync_duration_seconds', help: alpha('Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.'), buckets: POD_STATUS_SYNC_BUCKETS });
  const admissions = registry.counter({ name: 'kubelet_pod_level_resources_admission_total', help: alpha('Total number of pods admitted during Kubelet admission, categorized by resource configuration mode (pod_and_container_level, pod_level, container_level, or empty for unconfigured/BestEffort) and QoS class.'), labelNames: ['config_mode', 'qos_class'] });
  const containerFlows = containerFlowMetrics(registry);
  return {
    sandboxCreating: () => { started.inc(); },
    sandboxFailed: () => { startErrors.inc(); },
    orphanFound: () => { orphans.inc(); },
    podRestarted: (isStatic) => { restarted.inc({ static: staticLabel(isStatic) }); },
    podAdmitted: (pod) => {
      containers.observe({}, pod.spec?.containers.length ?? 0);
      admissions.inc({ config_mode: resourceConfigMode(pod), qos_class: podQosClass(pod).toLowerCase() });
    },
    statusSynced: (seconds) => { statusSync.observe({}, seconds); },
    ...containerFlows,
    ...imageFlowMetrics(registry),
  };
}
