/**
 * generatePodStatus: the pure mapping from (desired pod, observed runtime state) to the pod's API
 * status, as the kubelet's `generateAPIPodStatus` and `getPhase` compute it:
 *
 * - phase: Pending while any container waits without having run; Running while any runs; when all
 *   have stopped, Running while any of them is to restart by its restart policy (its rules, its
 *   own policy, else the pod's), Succeeded when every container exited 0, else Failed. A terminal
 *   phase already in the API is never left, and a terminal phase is never reported while anything
 *   of the pod may still run.
 * - conditions PodReadyToStartContainers, Initialized, ContainersReady, Ready (respecting
 *   readiness gates); conditions nodelet does not own (PodScheduled, DisruptionTarget, gates) are
 *   kept; `lastTransitionTime` only moves when a condition's status changes.
 * - `ephemeralContainerStatuses` for `kubectl debug` containers, which count in neither the phase
 *   nor the conditions.
 * - hostIP(s) from the node, podIP(s) from the sandbox (kept from the previous status once the
 *   sandbox is gone), startTime set once.
 * - a pod that can restart all its containers in place (a `RestartAllContainers` rule) also gets
 *   the `AllContainersRestarting` condition, and its removed containers are reported as the
 *   kubelet reports them (`restart-all-status.ts`).
 */
import type { V1Pod, V1PodCondition, V1PodStatus, V1ContainerStatus } from '@kubernetes/client-node';
import { computeInitActions, hasActiveAppContainers } from '../runtime/compute-init-actions.js';
import { anyAppContainerStarted, initContainerFailedForGood, initContainersHoldPending } from './init-phase.js';
import { isSidecar } from '../model/sidecar.js';
import { containerShouldRestart } from '../model/restart-policy.js';
import type { ContainerProbeResult } from '../probes/container-readiness.js';
import { generateContainerStatuses, generateEphemeralContainerStatuses, generateInitContainerStatuses, type ContainerStatusContext } from './container-statuses.js';
import type { ContainerStartFailure } from '../runtime/start-failures.js';
import { condition, DISRUPTION_TARGET, isOwnedCondition, POD_SCHEDULED, TERMINATION_BY_KUBELET, isTerminal, readinessConditions, readinessStatuses, withTransitionTimes, type Phase } from './pod-conditions.js';
import { hasRunningParts, latestSandbox, type ObservedContainer, type ObservedPod } from '../model/observed-pod.js';
import type { ResourceValues } from '../model/resource-values.js';
import { podQosClass } from '../model/qos.js';
import { POD_SANDBOX_NOT_READY, sandboxChangeReason } from '../model/sandbox-change.js';
import { isRestartAllTermination } from '../model/restart-all.js';
import { allContainersRestartingCondition, keepsInitialized, restartAllView, type RestartAllView } from './restart-all-status.js';


export interface GeneratePodStatusInput {
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  /** The node's InternalIP. */
  readonly nodeIp: string;
  readonly runtimeName: string;
  readonly now: Date;
  /** Start failures of the last reconcile, by container name. */
  readonly startFailures: ReadonlyMap<string, ContainerStartFailure>;
  /**
   * The pod is terminating (deleted, or terminal) and none of its containers runs any more: its
   * containers will not restart whatever the restart policy, so the phase is terminal (the kubelet's
   * `podIsTerminal`).
   */
  readonly podIsTerminal?: boolean;
  /**
   * Set when the pod ran out its `activeDeadlineSeconds`, was rejected or evicted: the phase becomes
   * Failed with this reason; `disruption` (eviction) adds the kubelet's DisruptionTarget condition.
   */
  readonly terminalReason?: { readonly reason: string; readonly message: string; readonly disruption?: boolean; readonly disruptionMessage?: string };
  /**
   * Readiness and startup probe results by runtime container ID (the status manager's
   * `ContainerReadinessStore`); a running container without a result is ready and started.
   */
  readonly probeResults?: ReadonlyMap<string, ContainerProbeResult>;
  /** What each running container was last given, for its status `resources` (the resize record). */
  readonly currentValuesOf?: (container: ObservedContainer) => ResourceValues | undefined;
  /** PodResizePending and PodResizeInProgress as the resize bookkeeping holds them (with their times). */
  readonly resizeConditions?: readonly V1PodCondition[];
  /**
   * When the agent started: a Ready pod's containers that were running before it keep their
   * readiness until their readiness probes report (an agent restart does not flap Ready).
   */
  readonly agentStartedAtMs?: number;
  /**
   * Whether a runtime handler makes read-only mounts recursive (the runtime's last CRI Status), for
   * `containerStatuses[].volumeMounts`; undefined for a handler it has not reported.
   */
  readonly recursiveReadOnlyOf?: (handler: string) => boolean | undefined;
  /**
   * The last status handed to the status manager (the kubelet's status manager cache), newer than
   * `pod.status` until its write lands; absent: `pod.status`. The owned conditions' transition
   * times and a pod restarting all its containers in place are judged against it.
   */
  readonly previousStatus?: V1PodStatus;
}

/** The kubelet's getPhase over regular containers. */
interface PhaseCounts {
  waiting: number;
  running: number;
  stopped: number;
  /** Stopped containers whose restart policy does not run them again (with their exit code). */
  stoppedNotRestartable: number;
  succeeded: number;
}

/**
 * Counts containers the way getPhase does: a waiting container that ran before counts as stopped,
 * and a stopped one counts as restartable when its restart policy (rules, its own, the pod's)
 * runs it again after that exit code.
 */
function countContainers(pod: V1Pod, statuses: readonly V1ContainerStatus[]): PhaseCounts {
  const counts: PhaseCounts = { waiting: 0, running: 0, stopped: 0, stoppedNotRestartable: 0, succeeded: 0 };
  const specs = new Map((pod.spec?.containers ?? []).map((c) => [c.name, c]));
  const seeStopped = (name: string, terminated: { exitCode: number; reason?: string }): void => {
    counts.stopped++;
    const spec = specs.get(name);
    // A container an in-place restart of the pod removed runs again whatever its own policy says.
    if (spec !== undefined && !containerShouldRestart(spec, pod.spec, terminated.exitCode) && !isRestartAllTermination(terminated)) counts.stoppedNotRestartable++;
  };
  for (const s of statuses) {
    if (s.state?.running) counts.running++;
    else if (s.state?.terminated) {
      seeStopped(s.name, s.state.terminated);
      if (s.state.terminated.exitCode === 0) counts.succeeded++;
    } else if (s.lastState?.terminated) seeStopped(s.name, s.lastState.terminated);
    else counts.waiting++;
  }
  return counts;
}

/**
 * The phase from the regular containers. Once all have stopped: Running while any of them is to
 * restart (the kubelet with ContainerRestartRules), else Succeeded when every one exited 0, else
 * Failed; a terminal pod's containers restart no more.
 */
export function computePhase(pod: V1Pod, statuses: readonly V1ContainerStatus[], podIsTerminal = false): Phase {
  const { waiting, running, stopped, stoppedNotRestartable, succeeded } = countContainers(pod, statuses);
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === 0) return 'Pending';
  if (!podIsTerminal && stopped !== stoppedNotRestartable) return 'Running';
  return stopped === succeeded ? 'Succeeded' : 'Failed';
}

/** Whether every regular init container succeeded (sidecars need only run); the names of those that did not. */
function incompleteInitContainers(pod: V1Pod, statuses: readonly V1ContainerStatus[]): string[] {
  return (pod.spec?.initContainers ?? [])
    .filter((spec) => {
      const s = statuses.find((st) => st.name === spec.name);
      return isSidecar(spec) ? s?.state?.running === undefined : s?.state?.terminated?.exitCode !== 0;
    })
    .map((spec) => spec.name);
}

function podIps(input: GeneratePodStatusInput): string[] {
  if (input.pod.spec?.hostNetwork === true) return [input.nodeIp];
  const sandbox = latestSandbox(input.observed);
  if (sandbox !== undefined && sandbox.ip !== '') return [sandbox.ip, ...sandbox.additionalIps];
  return (input.pod.status?.podIPs ?? []).map((p) => p.ip);
}

interface Statuses {
  readonly containers: readonly V1ContainerStatus[];
  readonly init: readonly V1ContainerStatus[];
  readonly initialized: boolean;
  readonly initFailed: boolean;
  /** Set for a pod that can restart all its containers in place. */
  readonly restartAll: RestartAllView | undefined;
}

/**
 * Initialized as the kubelet's GeneratePodInitializedCondition: True once every init container is
 * done, and for a pod whose app containers have run (a sidecar restarting later, or a finished pod
 * whose sandbox is gone); a Succeeded pod's carries the reason PodCompleted.
 */
function initializedCondition(phase: Phase, statuses: Statuses, incomplete: readonly string[]): V1PodCondition {
  if (phase === 'Succeeded') return { type: 'Initialized', status: 'True', reason: 'PodCompleted' };
  const initialized = statuses.initialized || anyAppContainerStarted(statuses.containers) || keepsInitialized(statuses.restartAll);
  return condition('Initialized', initialized, 'ContainersNotInitialized', `containers with incomplete status: [${incomplete.join(' ')}]`);
}

function ownedConditions(input: GeneratePodStatusInput, phase: Phase, statuses: Statuses): V1PodCondition[] {
  const sandboxNotReady = sandboxChangeReason(input.pod, input.observed.sandboxes);
  const incomplete = statuses.initialized ? [] : incompleteInitContainers(input.pod, statuses.init);
  // Sidecars count towards readiness like app containers.
  const counted = readinessStatuses(input.pod, statuses.init, statuses.containers);
  const restartAll = statuses.restartAll;
  return [
    condition('PodReadyToStartContainers', sandboxNotReady === undefined, POD_SANDBOX_NOT_READY, sandboxNotReady),
    initializedCondition(phase, statuses, incomplete),
    ...readinessConditions({ pod: input.pod, conditions: input.pod.status?.conditions ?? [], phase }, counted),
    ...(restartAll === undefined ? [] : [allContainersRestartingCondition(input.pod, input.observed, restartAll.previous, phase)]),
  ];
}

function unguardedPhase(input: GeneratePodStatusInput, statuses: Statuses): Phase {
  if (input.terminalReason !== undefined || statuses.initFailed || initContainerFailedForGood(input.pod, statuses.init)) return 'Failed';
  // Not initialized for the next reconcile (a sandbox gone, a sidecar stopped, init containers
  // running again after an in-place restart of all containers) holds the pod Pending only where
  // the init containers' statuses do, as in the kubelet's getPhase.
  if (!statuses.initialized && initContainersHoldPending(input.pod, statuses.init, hasActiveAppContainers(input.pod, input.observed))) return 'Pending';
  return computePhase(input.pod, statuses.containers, input.podIsTerminal === true);
}

/**
 * Phase with the kubelet's guards: terminal phases are sticky, and never reported while something
 * may run. Until then the phase stays what it was (the kubelet's `mergePodStatus` keeps the old
 * phase): a pod whose last container exited is still Running while its sandbox is torn down.
 */
function guardedPhase(input: GeneratePodStatusInput, statuses: Statuses): Phase {
  const previous = input.pod.status?.phase;
  if (isTerminal(previous)) return previous;
  const phase = unguardedPhase(input, statuses);
  if (isTerminal(phase) && hasRunningParts(input.observed)) {
    if (previous === 'Running' || previous === 'Pending') return previous;
    return statuses.containers.some((s) => s.state?.running) ? 'Running' : 'Pending';
  }
  return phase;
}

/** The reason a terminal pod shows: the new one (DeadlineExceeded), else the one already in the API. */
function terminalReasonOf(input: GeneratePodStatusInput): { reason: string; message: string } | undefined {
  if (input.terminalReason !== undefined) return input.terminalReason;
  const status = input.pod.status;
  return status?.reason === undefined ? undefined : { reason: status.reason, message: status.message ?? '' };
}

/**
 * The kubelet's DisruptionTarget condition of a pod the node stops (eviction), added once: an
 * existing one (ours from an earlier write, or a controller's) is kept as it is.
 */
function withDisruptionTarget(foreign: readonly V1PodCondition[], reason: GeneratePodStatusInput['terminalReason'], now: Date): V1PodCondition[] {
  if (reason?.disruption !== true || foreign.some((c) => c.type === DISRUPTION_TARGET)) return [...foreign];
  return [...foreign, { type: DISRUPTION_TARGET, status: 'True', reason: TERMINATION_BY_KUBELET, message: reason.disruptionMessage ?? reason.message, lastTransitionTime: now }];
}

/**
 * The kubelet's PodScheduled=True on every pod it runs: the scheduler's is kept as it is (its
 * transition time included); a pod bound by `spec.nodeName` alone, which no scheduler saw, gets one.
 */
function withPodScheduled(foreign: readonly V1PodCondition[], now: Date): V1PodCondition[] {
  if (foreign.some((c) => c.type === POD_SCHEDULED)) return [...foreign];
  return [...foreign, { type: POD_SCHEDULED, status: 'True', lastTransitionTime: now }];
}

function statusContext(input: GeneratePodStatusInput, restartAll: RestartAllView | undefined): ContainerStatusContext {
  return {
    pod: input.pod,
    observed: input.observed,
    runtimeName: input.runtimeName,
    startFailures: input.startFailures,
    podIsTerminal: input.podIsTerminal === true,
    ...(input.probeResults === undefined ? {} : { probeResults: input.probeResults }),
    ...(input.currentValuesOf === undefined ? {} : { currentValuesOf: input.currentValuesOf }),
    ...(input.agentStartedAtMs === undefined || !podIsReady(input.pod) ? {} : { readyPodAgentStartedAtMs: input.agentStartedAtMs }),
    ...recursiveReadOnlyField(input),
    ...(restartAll === undefined ? {} : { restartAll }),
  };
}

/**
 * The pod's handler's recursive read-only support: its newest sandbox's handler, else the default
 * one for a pod without a RuntimeClass; unknown for a RuntimeClass pod before its first sandbox.
 */
function recursiveReadOnlyField(input: GeneratePodStatusInput): { recursiveReadOnlySupported?: boolean } {
  const sandboxHandler = input.observed.sandboxes[0]?.runtimeHandler;
  const className = input.pod.spec?.runtimeClassName;
  const handler = sandboxHandler ?? (className === undefined || className === '' ? '' : undefined);
  const supported = handler === undefined ? undefined : input.recursiveReadOnlyOf?.(handler);
  return supported === undefined ? {} : { recursiveReadOnlySupported: supported };
}

/** The pod's Ready condition (as the API last had it) is True. */
function podIsReady(pod: V1Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Every condition of the status: the other writers' as they are (PodScheduled and DisruptionTarget
 * added when due), the owned ones with their transition times, then the resize conditions.
 */
function podConditions(input: GeneratePodStatusInput, phase: Phase, statuses: Statuses): V1PodCondition[] {
  const { now } = input;
  const previous = input.pod.status?.conditions ?? [];
  const foreign = withPodScheduled(withDisruptionTarget(previous.filter((c) => !isOwnedCondition(c.type)), input.terminalReason, now), now);
  // The owned conditions' times move against the last status handed over, as the kubelet's status manager stamps them.
  const ownedBefore = input.previousStatus?.conditions ?? previous;
  return [...foreign, ...withTransitionTimes(ownedConditions(input, phase, statuses), ownedBefore, now), ...(input.resizeConditions ?? [])];
}

/** Generates the pod's status. Pure: same input, same status. */
export function generatePodStatus(input: GeneratePodStatusInput): V1PodStatus {
  const { pod, now } = input;
  const restartAll = restartAllView(pod, input.observed, input.previousStatus ?? pod.status);
  const ctx = statusContext(input, restartAll);
  const init = computeInitActions(pod, input.observed);
  const statuses: Statuses = {
    containers: generateContainerStatuses(ctx, init.initialized),
    init: generateInitContainerStatuses(ctx),
    initialized: init.initialized,
    initFailed: init.failed,
    restartAll,
  };
  const phase = guardedPhase(input, statuses);
  // Reported beside the others, never counted in the phase or readiness.
  const ephemeral = generateEphemeralContainerStatuses(ctx);
  const ips = podIps(input);
  const reason = isTerminal(phase) ? terminalReasonOf(input) : undefined;
  return {
    phase,
    conditions: podConditions(input, phase, statuses),
    ...(reason === undefined ? {} : { reason: reason.reason, message: reason.message }),
    hostIP: input.nodeIp,
    hostIPs: [{ ip: input.nodeIp }],
    ...(ips.length === 0 ? {} : { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) }),
    startTime: pod.status?.startTime ?? now,
    qosClass: pod.status?.qosClass ?? podQosClass(pod),
    containerStatuses: [...statuses.containers],
    ...(statuses.init.length === 0 ? {} : { initContainerStatuses: [...statuses.init] }),
    ...(ephemeral.length === 0 ? {} : { ephemeralContainerStatuses: ephemeral }),
    ...(pod.metadata?.generation === undefined ? {} : { observedGeneration: pod.metadata.generation }),
  };
}
