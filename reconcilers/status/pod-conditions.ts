/**
 * The pod conditions nodelet owns, and the one implementation of the readiness conditions
 * (ContainersReady, Ready with readiness gates) shared by full status generation and the status
 * manager's narrow readiness path (as the kubelet's `GenerateContainersReadyCondition` /
 * `GeneratePodReadyCondition` serve both `generateAPIPodStatus` and `SetContainerReadiness`).
 */
import type { V1Pod, V1PodCondition, V1PodStatus, V1ContainerStatus } from '@kubernetes/client-node';
import { isSidecar } from '../model/sidecar.js';
import { ALL_CONTAINERS_RESTARTING } from '../model/restart-all.js';
import { goQuote } from '../../util/go-quote.js';

/**
 * Condition types nodelet writes (AllContainersRestarting only on pods that can restart all their
 * containers in place, as the kubelet). Everything else (PodScheduled from the scheduler, which nodelet only adds when missing,
 * DisruptionTarget from controllers, readiness-gate types) belongs to another writer: nodelet
 * reads them and never writes, clears or reorders them.
 */
export const OWNED_CONDITION_TYPES: readonly string[] = ['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready', 'PodResizePending', 'PodResizeInProgress', ALL_CONTAINERS_RESTARTING];

const OWNED = new Set(OWNED_CONDITION_TYPES);

export function isOwnedCondition(type: string): boolean {
  return OWNED.has(type);
}

/** The condition of a pod being disrupted; nodelet adds it (reason {@link TERMINATION_BY_KUBELET}) to pods it evicts. */
export const DISRUPTION_TARGET = 'DisruptionTarget';
export const TERMINATION_BY_KUBELET = 'TerminationByKubelet';

/** The scheduler's condition, which the kubelet also sets True on every pod it runs (a pod bound by `spec.nodeName` has no other). */
export const POD_SCHEDULED = 'PodScheduled';

/**
 * Whether nodelet writes this condition: an owned type, the DisruptionTarget nodelet itself set
 * on a pod it evicted (another writer's DisruptionTarget has another reason and is left alone),
 * or PodScheduled True (written back as it is when the scheduler set it; never cleared).
 */
export function isWrittenCondition(c: { readonly type: string; readonly reason?: string; readonly status?: string }): boolean {
  return isOwnedCondition(c.type) || (c.type === DISRUPTION_TARGET && c.reason === TERMINATION_BY_KUBELET) || (c.type === POD_SCHEDULED && c.status === 'True');
}

export type Phase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

export function isTerminal(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

export function condition(type: string, ok: boolean, reason?: string, message?: string): V1PodCondition {
  return { type, status: ok ? 'True' : 'False', ...(ok || reason === undefined ? {} : { reason }), ...(ok || message === undefined ? {} : { message }) };
}

/** The statuses readiness counts: sidecars (restartable init containers) and app containers. */
export function readinessStatuses(pod: V1Pod, init: readonly V1ContainerStatus[], containers: readonly V1ContainerStatus[]): V1ContainerStatus[] {
  const sidecarNames = new Set((pod.spec?.initContainers ?? []).filter(isSidecar).map((c) => c.name));
  return [...init.filter((s) => sidecarNames.has(s.name)), ...containers];
}

/** What the readiness conditions depend on besides the containers. */
export interface ReadinessContext {
  readonly pod: V1Pod;
  /** The pod's current conditions, where the readiness gates' conditions are found. */
  readonly conditions: readonly V1PodCondition[];
  readonly phase: Phase;
}

/** ContainersReady and Ready (without transition times). */
export function readinessConditions(ctx: ReadinessContext, statuses: readonly V1ContainerStatus[]): V1PodCondition[] {
  if (isTerminal(ctx.phase)) {
    return [condition('ContainersReady', false, 'PodCompleted'), condition('Ready', false, 'PodCompleted')];
  }
  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  const containersReady = unready.length === 0 && statuses.length > 0;
  const notReadyMessage = `containers with unready status: [${unready.join(' ')}]`;
  const unmetGates = unmetReadinessGates(ctx);
  const readyCondition = !containersReady
    ? condition('Ready', false, 'ContainersNotReady', notReadyMessage)
    : condition('Ready', unmetGates.length === 0, 'ReadinessGatesNotReady', unmetGates.join(', '));
  return [condition('ContainersReady', containersReady, 'ContainersNotReady', notReadyMessage), readyCondition];
}

/**
 * One message per readiness gate whose condition is missing or not True, worded and ordered as the
 * kubelet's `GeneratePodReadyCondition` (the gates' order in the spec; the Ready message joins them
 * with ", ").
 */
function unmetReadinessGates(ctx: ReadinessContext): string[] {
  return (ctx.pod.spec?.readinessGates ?? []).flatMap(({ conditionType }) => {
    const gate = ctx.conditions.find((c) => c.type === conditionType);
    if (gate === undefined) return [`corresponding condition of pod readiness gate ${goQuote(conditionType)} does not exist.`];
    return gate.status === 'True' ? [] : [`the status of pod readiness gate ${goQuote(conditionType)} is not "True", but ${gate.status}`];
  });
}

/**
 * Whether the pod's Ready condition, as the API holds it, disagrees in status or message with what
 * its own container statuses and readiness-gate conditions give: the kubelet's
 * `NeedToReconcilePodReadiness`. Only for a pod with readiness gates and a Ready condition already
 * written. Another writer setting a gate's condition is a status-only change that must reach the
 * pod's sync (the kubelet's `HandlePodReconcile`), while the echo of nodelet's own write never
 * disagrees: it was generated from the same fields.
 */
export function readinessNeedsReconcile(pod: V1Pod): boolean {
  if ((pod.spec?.readinessGates ?? []).length === 0) return false;
  const status = pod.status ?? {};
  const current = status.conditions?.find((c) => c.type === 'Ready');
  if (current === undefined) return false;
  const wanted = readinessOfStatus(pod, status).find((c) => c.type === 'Ready');
  return wanted !== undefined && (wanted.status !== current.status || (wanted.message ?? '') !== (current.message ?? ''));
}

/** Keeps `lastTransitionTime` of a condition whose status did not change; stamps `now` on the others. */
export function withTransitionTimes(conditions: readonly V1PodCondition[], previous: readonly V1PodCondition[], now: Date): V1PodCondition[] {
  return conditions.map((c) => {
    const old = previous.find((p) => p.type === c.type);
    const lastTransitionTime = old?.status === c.status && old.lastTransitionTime !== undefined ? old.lastTransitionTime : now;
    return { ...c, lastTransitionTime };
  });
}

function phaseOf(status: V1PodStatus): Phase {
  const phase = status.phase;
  return phase === 'Running' || isTerminal(phase) ? phase : 'Pending';
}

/** ContainersReady and Ready as `status` itself gives them: from its container statuses, its conditions (the gates') and its phase. */
function readinessOfStatus(pod: V1Pod, status: V1PodStatus): V1PodCondition[] {
  const statuses = readinessStatuses(pod, status.initContainerStatuses ?? [], status.containerStatuses ?? []);
  return readinessConditions({ pod, conditions: status.conditions ?? [], phase: phaseOf(status) }, statuses);
}

/**
 * `status` with ContainersReady and Ready recomputed from its container statuses' `ready` flags
 * (after one of them changed), every other condition untouched and in place.
 */
export function recomputeReadiness(pod: V1Pod, status: V1PodStatus, now: Date): V1PodStatus {
  const previous = status.conditions ?? [];
  const fresh = withTransitionTimes(readinessOfStatus(pod, status), previous, now);
  const byType = new Map(fresh.map((c) => [c.type, c]));
  const replaced = previous.map((c) => byType.get(c.type) ?? c);
  const added = fresh.filter((c) => !previous.some((p) => p.type === c.type));
  return { ...status, conditions: [...replaced, ...added] };
}
