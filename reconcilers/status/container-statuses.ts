/**
 * Container statuses as the kubelet reports them (`convertToAPIContainerStatuses`): the newest
 * runtime container of each spec container gives `state`, the one before it `lastState`; a start
 * failure from the last reconcile (image pull, config error) shows as `waiting` with its reason.
 * A pod that can restart all its containers in place also reports what its previous status
 * counted, and the containers such a restart removed (`restart-all-status.ts`).
 */
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { ObservedContainer, ObservedPod } from '../model/observed-pod.js';
import { statusResources, type ResourceValues } from '../model/resource-values.js';
import { predatesAgent, type ContainerProbeResult } from '../probes/container-readiness.js';
import { probedFlags, probesOf } from './probe-status.js';
import { isTerminal } from './pod-conditions.js';
import type { ContainerStartFailure } from '../runtime/start-failures.js';
import { volumeMountStatuses } from './volume-mount-statuses.js';
import { withRestartAll, type RestartAllView } from './restart-all-status.js';

export interface ContainerStatusContext {
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  /** e.g. `containerd`, for `containerID: containerd://<id>`. */
  readonly runtimeName: string;
  readonly startFailures: ReadonlyMap<string, ContainerStartFailure>;
  /** The pod is terminal: a container that is not running and has no exit to show was lost. */
  readonly podIsTerminal: boolean;
  /** Probe results by runtime container ID; a container without one is ready and started while it runs. */
  readonly probeResults?: ReadonlyMap<string, ContainerProbeResult>;
  /** What a running container was last given (in-place resize record or creation annotation), for its `resources`. */
  readonly currentValuesOf?: (container: ObservedContainer) => ResourceValues | undefined;
  /**
   * Set when the pod's Ready condition is True: the agent's start. A container running since before
   * it (`predatesAgent`) stays ready until its readiness probe reports.
   */
  readonly readyPodAgentStartedAtMs?: number;
  /** Whether the pod's runtime handler makes read-only mounts recursive; undefined while not known. */
  readonly recursiveReadOnlySupported?: boolean;
  /** Set for a pod that can restart all its containers in place: whether it is, and its previous status. */
  readonly restartAll?: RestartAllView;
}

const UNKNOWN_ON_TERMINATION: V1ContainerState = {
  terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' },
};

function terminatedState(c: ObservedContainer, runtimeName: string): V1ContainerState {
  return {
    terminated: {
      exitCode: c.exitCode,
      reason: c.reason === '' ? (c.exitCode === 0 ? 'Completed' : 'Error') : c.reason,
      ...(c.message === '' ? {} : { message: c.message }),
      ...(c.startedAt === undefined ? {} : { startedAt: c.startedAt }),
      ...(c.finishedAt === undefined ? {} : { finishedAt: c.finishedAt }),
      containerID: `${runtimeName}://${c.id}`,
    },
  };
}

function currentState(latest: ObservedContainer | undefined, failure: ContainerStartFailure | undefined, ctx: { runtimeName: string; waitingReason: string }): V1ContainerState {
  const { runtimeName } = ctx;
  if (latest?.state === 'CONTAINER_RUNNING') {
    return { running: latest.startedAt === undefined ? {} : { startedAt: latest.startedAt } };
  }
  if (failure !== undefined) return { waiting: { reason: failure.reason, message: failure.message } };
  if (latest === undefined || latest.state === 'CONTAINER_CREATED') return { waiting: { reason: ctx.waitingReason } };
  if (latest.state === 'CONTAINER_UNKNOWN') {
    return UNKNOWN_ON_TERMINATION;
  }
  return terminatedState(latest, runtimeName);
}

/** The instances of one container, newest first. */
function instancesOf(observed: ObservedPod, name: string): ObservedContainer[] {
  return observed.containers.filter((c) => c.name === name);
}

/**
 * The instance shown as `lastState`: the newest exited instance older than the one `state` shows.
 * When a start failure hides a newest exited instance (the restart failed), that one is `lastState`.
 */
function lastStateOf(instances: readonly ObservedContainer[], current: V1ContainerState, runtimeName: string): V1ContainerState {
  const hidden = current.waiting !== undefined && instances[0]?.state === 'CONTAINER_EXITED';
  const previous = instances[hidden ? 0 : 1];
  return previous?.state === 'CONTAINER_EXITED' ? terminatedState(previous, runtimeName) : {};
}

/** How one list of containers is reported. */
interface ListKind {
  /** Waiting reason of a container not created yet: `ContainerCreating`, or `PodInitializing` before init completes. */
  readonly waitingReason: string;
  /** Regular init containers are ready once they succeeded; everything else while it runs. */
  readonly readyWhenSucceeded: (spec: V1Container) => boolean;
}

function readiness(spec: V1Container, state: V1ContainerState, kind: ListKind, probed: { result: ContainerProbeResult | undefined; agentStartedAtMs: number | undefined }): { ready: boolean; started: boolean } {
  const running = state.running !== undefined;
  if (kind.readyWhenSucceeded(spec)) return { ready: state.terminated?.exitCode === 0, started: running };
  const startedAt = state.running?.startedAt;
  const keptReady = predatesAgent(startedAt === undefined ? undefined : new Date(startedAt).getTime(), probed.agentStartedAtMs);
  return probedFlags(running, probed.result, probesOf(spec), keptReady);
}

/**
 * `allocatedResources` (the allocated requests; `spec` is the allocated container) and `resources`:
 * a running container's are what the runtime applies (ContainerStatus resources), any other's the
 * allocated ones, as the kubelet's `convertContainerStatusResources`. The API server allows a resize
 * only of pods whose running containers report `resources`.
 */
function resourcesFields(spec: V1Container, latest: ObservedContainer | undefined, ctx: ContainerStatusContext): Pick<V1ContainerStatus, 'allocatedResources' | 'resources'> {
  const requests = spec.resources?.requests;
  const allocated = requests === undefined ? {} : { allocatedResources: { ...requests } };
  if (latest?.state !== 'CONTAINER_RUNNING') return { ...allocated, resources: { ...spec.resources } };
  return { ...allocated, resources: statusResources(spec.resources, latest.applied, ctx.currentValuesOf?.(latest)) };
}

/** Whether the status is generated as terminal, or the API already shows the pod finished. */
function isTerminalPod(ctx: ContainerStatusContext): boolean {
  return ctx.podIsTerminal || isTerminal(ctx.pod.status?.phase);
}

/**
 * The terminated status the API already shows for a container of a terminal pod that the runtime
 * no longer has (nodelet removes a deleted pod's containers while finalizers keep the object, and
 * an evicted pod's dead containers once the API shows it Failed): kept, as the kubelet keeps an old
 * terminated status, instead of regressing to ContainerStatusUnknown or a waiting state and losing
 * the exit code and finishedAt.
 */
function keptTerminated(spec: V1Container, ctx: ContainerStatusContext, latest: ObservedContainer | undefined): V1ContainerStatus | undefined {
  if (!isTerminalPod(ctx) || latest !== undefined) return undefined;
  const previous = previousStatusOf(ctx, spec.name);
  return previous?.state?.terminated === undefined ? undefined : { ...previous, ready: false };
}

function containerStatus(spec: V1Container, ctx: ContainerStatusContext, kind: ListKind): V1ContainerStatus {
  const instances = instancesOf(ctx.observed, spec.name);
  const latest = instances[0];
  const kept = keptTerminated(spec, ctx, latest);
  if (kept !== undefined) return kept;
  const failure = latest?.state === 'CONTAINER_RUNNING' ? undefined : ctx.startFailures.get(spec.name);
  const observedState = currentState(latest, failure, { runtimeName: ctx.runtimeName, waitingReason: kind.waitingReason });
  const state = ctx.podIsTerminal && observedState.waiting !== undefined ? UNKNOWN_ON_TERMINATION : observedState;
  const { ready, started } = readiness(spec, state, kind, { result: latest === undefined ? undefined : ctx.probeResults?.get(latest.id), agentStartedAtMs: ctx.readyPodAgentStartedAtMs });
  const status: V1ContainerStatus = {
    name: spec.name,
    state,
    lastState: lastStateOf(instances, state, ctx.runtimeName),
    ready,
    started,
    restartCount: latest?.restartCount ?? 0,
    image: spec.image ?? '',
    imageID: latest?.imageRef ?? '',
    ...(latest === undefined ? {} : { containerID: `${ctx.runtimeName}://${latest.id}` }),
    ...resourcesFields(spec, latest, ctx),
    ...userField(latest),
    ...volumeMountStatuses(spec, ctx.recursiveReadOnlySupported, previousStatusOf(ctx, spec.name)),
  };
  return ctx.restartAll === undefined ? status : withRestartAll(status, ctx.restartAll, latest !== undefined);
}

/** The container's status as the API holds it (any of the pod's three lists). */
function previousStatusOf(ctx: ContainerStatusContext, name: string): V1ContainerStatus | undefined {
  const old = ctx.pod.status;
  return [...(old?.containerStatuses ?? []), ...(old?.initContainerStatuses ?? []), ...(old?.ephemeralContainerStatuses ?? [])].find((s) => s.name === name);
}

/** `user`: the identity the runtime reports for the container's first process (the kubelet's convertContainerStatusUser); absent when it reports none. */
function userField(latest: ObservedContainer | undefined): Pick<V1ContainerStatus, 'user'> {
  const user = latest?.user;
  if (user === undefined) return {};
  return { user: { linux: { uid: Number(user.uid), gid: Number(user.gid), supplementalGroups: user.supplementalGroups.map(Number) } } };
}

/** Status of every app container of the pod, in spec order. */
export function generateContainerStatuses(ctx: ContainerStatusContext, initialized: boolean): V1ContainerStatus[] {
  const kind: ListKind = { waitingReason: initialized ? 'ContainerCreating' : 'PodInitializing', readyWhenSucceeded: () => false };
  return (ctx.pod.spec?.containers ?? []).map((spec) => containerStatus(spec, ctx, kind));
}

/**
 * Status of every ephemeral container of the pod, in spec order, as the kubelet's
 * `ephemeralContainerStatuses`: waiting (`ContainerCreating`, `PodInitializing` when the pod has init
 * containers, or the start failure's reason), running, or terminated with the exit code. Never
 * ready and without `started`, as the kubelet's prober leaves them alone (they have no probes and
 * count neither in the pod's readiness nor in its phase).
 */
export function generateEphemeralContainerStatuses(ctx: ContainerStatusContext): V1ContainerStatus[] {
  const hasInit = (ctx.pod.spec?.initContainers ?? []).length > 0;
  const kind: ListKind = { waitingReason: hasInit ? 'PodInitializing' : 'ContainerCreating', readyWhenSucceeded: () => false };
  return (ctx.pod.spec?.ephemeralContainers ?? []).map((spec) => {
    // Ephemeral containers have no resources of their own.
    const { started: _started, allocatedResources: _allocated, resources: _resources, ...status } = containerStatus(spec, ctx, kind);
    return { ...status, ready: false };
  });
}

/** Status of every init container of the pod (sidecars included), in spec order. */
export function generateInitContainerStatuses(ctx: ContainerStatusContext): V1ContainerStatus[] {
  const kind: ListKind = { waitingReason: 'PodInitializing', readyWhenSucceeded: (spec) => spec.restartPolicy !== 'Always' };
  return (ctx.pod.spec?.initContainers ?? []).map((spec) => containerStatus(spec, ctx, kind));
}
