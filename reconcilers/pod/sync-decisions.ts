/**
 * The pure decisions of a syncing run (`sync-pod.ts`): whether the pod must stop and why, what its
 * Failed status says, whether a plan touches the runtime, and what the queue hears back.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ReconcileResult } from '../../util/reconcile.js';
import { rejectedStatusMessage, type Rejection } from '../admission/index.js';
import type { NodeKill } from '../lifecycle/evictions.js';
import type { ObservedPod } from '../model/observed-pod.js';
import type { ContainerStartError } from '../model/sync-errors.js';
import type { ExecuteResult } from '../runtime/execute-pod-actions.js';
import type { KnownRuntimeObjects } from '../runtime/observe-pod.js';
import type { PodActions } from '../runtime/pod-actions.js';
import { knownObjectsOf, type StatusHow, type TerminalReason } from './run-scope.js';

/** How soon a pod whose resize was just actuated is looked at again (to see it complete, as the kubelet's re-inspect). */
const RESIZE_RECHECK_MS = 1000;

/** How soon a pod whose containers an in-place restart removed runs again: at once (the queue's smallest delay). */
const RESTART_ALL_RESYNC_MS = 1;

export const DEADLINE_EXCEEDED = { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' } as const;

/** What a syncing run decides before it plans: must the pod stop, and how. */
export interface StopDecision {
  readonly mustStop: boolean;
  readonly deadlineExceeded: boolean;
  /** What a Failed status says (a rejection, an eviction, DeadlineExceeded); undefined while the pod may run. */
  readonly terminalReason: TerminalReason | undefined;
  /** A node-initiated stop's grace period (eviction), at most the pod's own. */
  readonly killGraceSeconds: number | undefined;
}

export function isTerminalPhase(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Milliseconds until the pod's activeDeadlineSeconds runs out (≤ 0: exceeded); undefined without a deadline. */
export function activeDeadlineRemainingMs(pod: V1Pod, nowMs: number): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  const start = pod.status?.startTime;
  if (seconds === undefined || start === undefined) return undefined;
  return new Date(start).getTime() + seconds * 1000 - nowMs;
}

/**
 * Whether a plan only stops things (a container, the sandbox) and starts nothing. Such a run first
 * hands the status it found to the status manager, as the kubelet's SyncPod does before it kills:
 * a container's exit reaches the API without waiting for the sandbox's teardown (its network's
 * removal included). The phase stays as it was until nothing runs (the status generator's guard);
 * the status manager writes only what changed.
 */
export function stopsOnly(plan: PodActions): boolean {
  return (plan.killPod || plan.containersToKill.length > 0 || plan.containersToReset.length > 0) && !plan.createSandbox && plan.containersToStart.length === 0;
}

/** Whether carrying out `plan` touches the runtime (stops, removes, creates or starts anything). */
export function changesRuntime(plan: PodActions): boolean {
  return plan.killPod || plan.createSandbox || plan.containersToKill.length > 0 || plan.containersToReset.length > 0 || plan.containersToStart.length > 0;
}

/**
 * A run that removed a pod's containers for an in-place restart asks for the next run at once,
 * which starts the pod again, as the kubelet's syncPod updates the pod worker right after a reset
 * instead of waiting for PLEG or the periodic resync. It cannot loop: with every container gone,
 * the next run finds nothing to remove and the AllContainersRestarting condition turns False.
 */
export function withRestartAllResync(result: ReconcileResult, plan: PodActions): ReconcileResult {
  if (plan.containersToReset.length === 0) return result;
  return { requeueAfterMs: Math.min(result.requeueAfterMs ?? RESTART_ALL_RESYNC_MS, RESTART_ALL_RESYNC_MS) };
}

/** How a syncing run's status is generated: not terminal yet, as allocated, with the reason it must stop, if any. */
export function statusHowOf(allocated: V1Pod, stop: StopDecision): StatusHow {
  return { podIsTerminal: false, allocated, ...(stop.terminalReason === undefined ? {} : { terminalReason: stop.terminalReason }) };
}

/** The Failed status of a rejected, evicted or timed-out pod (in that order of precedence). */
export function terminalReasonOf(rejection: Rejection | undefined, kill: NodeKill | undefined, deadlineExceeded: boolean): TerminalReason | undefined {
  if (rejection !== undefined) return { reason: rejection.reason, message: rejectedStatusMessage(rejection.message) };
  if (kill !== undefined) return { reason: kill.reason, message: kill.message, disruption: kill.disruptionTarget !== false, ...(kill.disruptionMessage === undefined ? {} : { disruptionMessage: kill.disruptionMessage }) };
  return deadlineExceeded ? DEADLINE_EXCEEDED : undefined;
}

/** The queue's answer to a run whose setup went through: requeue for the earliest backoff end or deadline; throw the first failure that is not a backoff. */
export function resultOfStartFailures(failures: readonly ContainerStartError[], deadlineMs: number | undefined): ReconcileResult {
  const hard = failures.find((f) => f.retryAfterMs === undefined);
  if (hard !== undefined) throw hard;
  const waits = [...failures.map((f) => f.retryAfterMs ?? 0), ...(deadlineMs !== undefined && deadlineMs > 0 ? [deadlineMs] : [])];
  return waits.length === 0 ? {} : { requeueAfterMs: Math.max(1, Math.min(...waits)) };
}

/** A pod whose resize was just actuated is looked at again soon, to see it complete. */
export function withResizeRecheck(result: ReconcileResult, resized: boolean): ReconcileResult {
  return resized ? { requeueAfterMs: Math.min(result.requeueAfterMs ?? RESIZE_RECHECK_MS, RESIZE_RECHECK_MS) } : result;
}

/** Throws a failed setup step's error (after the status was written), so the queue retries. */
export function throwSetupError(setupError: unknown): void {
  if (setupError instanceof Error) throw setupError;
  if (setupError !== undefined) throw new Error('pod sync failed', { cause: setupError });
}

/** Every object a run that went through cleanly leaves the pod with: what it started from, and what it started. */
export function knownAfter(observed: ObservedPod, result: ExecuteResult): KnownRuntimeObjects {
  const started = result.started;
  const { sandboxIds, containers } = knownObjectsOf(observed);
  if (started === undefined) return { sandboxIds, containers };
  return {
    sandboxIds: sandboxIds.includes(started.sandboxId) ? sandboxIds : [...sandboxIds, started.sandboxId],
    containers: [...containers, ...started.containerIds.map((id) => ({ id, podSandboxId: started.sandboxId }))],
  };
}
