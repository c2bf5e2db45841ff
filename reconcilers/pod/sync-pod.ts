/**
 * The run of a pod that exists and is not being deleted, the kubelet's `SyncPod`: admit, decide
 * whether it must stop, plan, execute, observe again, report. Containers that wait out a backoff
 * (CrashLoopBackOff, ImagePullBackOff) are reported and the pod requeued for when the backoff ends.
 * A pod past its `activeDeadlineSeconds` is killed and Failed with `DeadlineExceeded`; a pod the
 * eviction manager chose is killed with its eviction grace period and Failed with `Evicted` and a
 * `DisruptionTarget` condition. A pod whose API phase is terminal is only ever killed: a finished
 * pod never starts again. A pod restarting all its containers in place (`model/restart-all.ts`)
 * has them removed in one run and started again from the next, which it asks for at once.
 */
import path from 'node:path';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PodKey } from '../../util/pod-key.js';
import type { ReconcileResult } from '../../util/reconcile.js';
import { isEvictedStatus, type AdmitDecision, type Rejection } from '../admission/index.js';
import { podGracePeriodSeconds, podIdentity, podLogDirectory } from '../container/sandbox-config.js';
import { restartCountFromLogDir } from '../model/container-logs.js';
import { restartsAllContainersNow } from '../model/restart-all.js';
import { isStaticPodObject } from '../lifecycle/static-pod-names.js';
import { hasRunningParts, latestContainer, type ObservedPod } from '../model/observed-pod.js';
import { isCancellation } from '../model/sync-errors.js';
import { probeVerdicts } from '../probes/probe-failures.js';
import { NO_RESIZE, type ResizeActions } from '../resize/compute-resize-actions.js';
import { computePodActions } from '../runtime/compute-pod-actions.js';
import type { ExecuteResult } from '../runtime/execute-pod-actions.js';
import { observeKnownPod } from '../runtime/observe-pod.js';
import type { PodActions } from '../runtime/pod-actions.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';
import { callOptionsOf, observe, reported, statusOf, writeStatus, type RunScope } from './run-scope.js';
import {
  activeDeadlineRemainingMs,
  changesRuntime,
  DEADLINE_EXCEEDED,
  isTerminalPhase,
  knownAfter,
  resultOfStartFailures,
  statusHowOf,
  stopsOnly,
  terminalReasonOf,
  throwSetupError,
  withResizeRecheck,
  withRestartAllResync,
  type StopDecision,
} from './sync-decisions.js';

/** How long a pod waits for admission to be decidable (the Node object to be known). */
const ADMISSION_RETRY_MS = 1000;

/**
 * How soon a static pod waiting for its full name looks again. The predecessor's release also
 * replaces the mirror pod, whose creation syncs the waiting pod at once: this is the safety net.
 */
const STATIC_NAME_RETRY_MS = 1000;

/** Admits, plans, executes and reports one syncing pod; throws a failed setup step after reporting. */
export async function syncPod(deps: PodReconcilerOptions, scope: RunScope, pod: V1Pod, observed: ObservedPod): Promise<ReconcileResult> {
  if (waitsForStaticName(deps, scope, pod)) return { requeueAfterMs: STATIC_NAME_RETRY_MS };
  const verdict = admissionVerdict(deps, scope, pod);
  if (verdict.kind === 'deferred') {
    scope.log.debug({ why: verdict.why }, 'admission cannot decide yet: the pod waits');
    return { requeueAfterMs: ADMISSION_RETRY_MS };
  }
  const stop = stopDecision(deps, scope.key, pod, verdict.kind === 'rejected' ? verdict.rejection : undefined);
  const resize = resizeStep(deps, { pod, observed, stopsOnly: stop.mustStop || verdict.kind !== 'admitted' });
  const restartAllContainers = restartsAllNow(deps, pod, observed, stop.mustStop);
  const logRestartCounts = await logRestartCountsOf(deps, pod, observed, stop.mustStop);
  const plan = computePodActions({ pod: resize.pod, observed, terminating: stop.mustStop, probes: probeVerdictsOf(deps, resize.pod, observed), resizeRestarts: resize.actions.restarts, restartAllContainers, logRestartCounts });
  scope.log.debug({ plan }, 'computed pod actions');
  if (!stop.mustStop && plan.createSandbox && observed.sandboxes.length === 0 && deps.admission?.isPaused() === true) {
    hold(deps, { pod, observed, log: scope.log });
    return {};
  }
  const gracePeriodSeconds = enterLifecycle(deps, scope.key, pod, stop);
  reportSandboxChange(deps, pod, plan, observed);
  const how = statusHowOf(resize.pod, stop);
  if (stopsOnly(plan)) writeStatus(deps, scope, { pod, observed, how });
  const { result, setupError } = await executePlan(deps, scope, { pod: resize.pod, plan, observed, gracePeriodSeconds });
  deps.startFailures.record(scope.key.uid, plan.containersToStart.map((t) => t.name), result.failures);
  // Containers an in-place restart just removed have nothing left to resize.
  const resized = await actuateResize(deps, scope, resize, setupError === undefined && !stop.mustStop && !restartAllContainers);
  const after = await observeAfter(deps, scope, { plan, resized, observed, result, setupError });
  const written = writeStatus(deps, scope, { pod, observed: after, how });
  const left = await finishIfStopped(deps, scope, pod, { after, written, mustStop: stop.mustStop });
  reportIfSettled(deps, { pod: resize.pod, after: left, mustStop: stop.mustStop, setupError });
  throwSetupError(setupError);
  return withRestartAllResync(withResizeRecheck(resultOfStartFailures(result.failures, deadlineToWaitFor(deps, pod, stop, written)), resized || resize.actions.restarts.size > 0), plan);
}

/**
 * Whether the pod's containers are to be removed now for an in-place restart of the pod (never for
 * a pod that must stop), judged from the runtime and the last status handed over for it, as the
 * kubelet's SyncPod acts on the AllContainersRestarting condition of the status it just generated.
 */
function restartsAllNow(deps: PodReconcilerOptions, pod: V1Pod, observed: ObservedPod, mustStop: boolean): boolean {
  return !mustStop && restartsAllContainersNow(pod, observed, deps.heldStatus?.(observed.uid) ?? pod.status);
}

/**
 * For each init and regular container the runtime has no instance of, the restart count its log
 * directory gives (read before planning, so the plan stays pure); none for a pod that must stop or
 * without a pod log root. A directory that cannot be read gives 0, as the kubelet starts such a
 * container at 0 when it cannot count.
 */
async function logRestartCountsOf(deps: PodReconcilerOptions, pod: V1Pod, observed: ObservedPod, mustStop: boolean): Promise<ReadonlyMap<string, number>> {
  const root = deps.podLogDir;
  if (root === undefined || mustStop) return new Map();
  const podDir = podLogDirectory(podIdentity(pod), root);
  const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.name).filter((name) => latestContainer(observed, name) === undefined);
  const counts = await Promise.all(
    names.map(async (name): Promise<[string, number]> => {
      try {
        return [name, await restartCountFromLogDir(path.join(podDir, name))];
      } catch (error) {
        deps.logger.info({ podUID: observed.uid, container: name, err: error }, 'cannot count restarts from the log directory: starting at 0');
        return [name, 0];
      }
    }),
  );
  return new Map(counts.filter(([, count]) => count > 0));
}

/**
 * The runtime after a run: read again when the run acted on it; else what the run started from
 * is what there is (a change made by someone else meanwhile reaches PLEG, which syncs the pod
 * again), as the kubelet reports the status its sync started with. A run that went through
 * cleanly knows every object the pod has (what it started from, and what it started: nothing
 * else creates them), so it reads their statuses by ID without listing; after a failure (a
 * container created but not started, a sandbox without its status) the runtime is listed.
 */
function observeAfter(
  deps: PodReconcilerOptions,
  scope: RunScope,
  run: { plan: PodActions; resized: boolean; observed: ObservedPod; result: ExecuteResult; setupError: unknown },
): Promise<ObservedPod> {
  if (!changesRuntime(run.plan) && !run.resized) return Promise.resolve(run.observed);
  if (run.setupError !== undefined || run.result.failures.length > 0) return observe(deps, scope);
  return observeKnownPod(deps.runtime, scope.key.uid, knownAfter(run.observed, run.result), callOptionsOf(scope));
}

/**
 * A pod that must stop or whose status is terminal, with nothing running: its termination
 * completes. An evicted pod whose eviction the API already shows (the object this run started
 * from) also loses its dead containers and their logs, as the kubelet's `HandlePodReconcile`
 * removes every dead container of an evicted pod once its status is synced: the status keeps
 * their terminated states (`keptTerminated`), read from the API. Returns what is left in the runtime.
 */
async function finishIfStopped(deps: PodReconcilerOptions, scope: RunScope, pod: V1Pod, run: { after: ObservedPod; written: V1PodStatus; mustStop: boolean }): Promise<ObservedPod> {
  if (!(run.mustStop || isTerminalPhase({ status: run.written })) || hasRunningParts(run.after)) return run.after;
  await completeTermination(deps, scope.key, pod);
  if (!isEvictedStatus(pod.status) || !run.after.containers.some((c) => c.state === 'CONTAINER_EXITED')) return run.after;
  return deps.executor.removeDeadContainers(scope.key, run.after, scope.signal);
}

/**
 * How long until the deadline this run must wake up for, from the start time in the status it
 * wrote: the API object's, or the one this run stamped on a pod that had none (its first run),
 * as the kubelet's deadline check reads its status manager's status. The echo of that write may
 * arrive while this run still holds the UID, and is then dropped.
 */
function deadlineToWaitFor(deps: PodReconcilerOptions, pod: V1Pod, stop: StopDecision, written: V1PodStatus): number | undefined {
  if (stop.deadlineExceeded) return undefined;
  return activeDeadlineRemainingMs({ ...pod, status: written }, deps.clock.now());
}

/** Applies the resize's in-place updates when the pod still runs and its setup went well; true when any was made. */
async function actuateResize(deps: PodReconcilerOptions, scope: RunScope, resize: { pod: V1Pod; actions: ResizeActions }, runs: boolean): Promise<boolean> {
  if (!runs) return false;
  return (await deps.resizer?.actuate(resize.pod, resize.actions, scope.signal)) === true;
}

/**
 * The pod as allocated and the resize it asks for (`resize/pod-resizer.ts`): an admitted, running
 * pod's resize is allocated or left pending and its progress noted before anything runs; a pod
 * that only stops, or is not admitted, runs as already allocated and asks for nothing.
 */
function resizeStep(deps: PodReconcilerOptions, run: { pod: V1Pod; observed: ObservedPod; stopsOnly: boolean }): { pod: V1Pod; actions: ResizeActions } {
  const resizer = deps.resizer;
  if (resizer === undefined) return { pod: run.pod, actions: NO_RESIZE };
  if (run.stopsOnly) return { pod: resizer.allocatedPod(run.pod), actions: NO_RESIZE };
  const allocated = resizer.allocate(run.pod);
  resizer.progress(allocated, run.observed);
  return { pod: allocated, actions: resizer.plan(allocated, run.observed) };
}

/**
 * Nothing of a pod that must stop runs any more: it terminated. That is known in the run that
 * wrote its terminal phase (its last container exited under restartPolicy Never or OnFailure),
 * not only once the API echoes it (an echo that arrives while this run holds the UID is dropped,
 * which would leave the rest to the next resync), as the kubelet's pod worker moves a pod whose
 * sync reported a terminal phase straight on to terminating and terminated. Then, as the
 * kubelet's SyncTerminatedPod, its volumes are torn down while its object remains (Succeeded,
 * Failed, evicted): the disk of its emptyDirs and the memory of its tmpfs ones are freed without
 * waiting for the object's deletion. Last, the managers hear it: admission stops counting the
 * pod's resources, its cgroup goes, its probes stop. Once per pod in this process; a teardown
 * that failed leaves the pod terminating, and the next run tries again.
 */
async function completeTermination(deps: PodReconcilerOptions, key: PodKey, pod: V1Pod): Promise<void> {
  const { lifecycle } = deps;
  if (lifecycle.get(key.uid)?.phase === 'terminated') return;
  lifecycle.terminate(key, podGracePeriodSeconds(pod));
  await deps.volumes.teardown(key.uid);
  lifecycle.terminated(key);
}

/** The probers' verdicts on the running containers; failures of instances that are gone are dropped. */
function probeVerdictsOf(deps: PodReconcilerOptions, pod: V1Pod, observed: ObservedPod): ReturnType<typeof probeVerdicts> {
  const { probeFailures, probeResults } = deps;
  probeFailures.retainOnly(observed.uid, new Set(observed.containers.map((c) => c.id)));
  return probeVerdicts(pod, observed, probeFailures.of(observed.uid), probeResults.resultsOf(observed.uid));
}

/**
 * Whether a static pod that has not started must wait: another static pod of its full name still
 * runs or stops (the old pod of an edited manifest, within its grace period), or is ahead of it in
 * line, as the kubelet's pod workers hold a static pod back (`allowStaticPodStart`). Nothing is
 * admitted, started or reported meanwhile: its mirror pod still shows its predecessor. A pod that
 * already started, or that only stops, never waits.
 */
function waitsForStaticName(deps: PodReconcilerOptions, scope: RunScope, pod: V1Pod): boolean {
  const names = deps.staticPodNames;
  const syncing = (uid: string): boolean => (deps.lifecycle.get(uid)?.phase ?? 'syncing') === 'syncing';
  if (names === undefined || !isStaticPodObject(pod) || !syncing(scope.key.uid)) return false;
  const decision = names.tryStart(scope.key, (uid) => deps.store.get(uid) !== undefined && syncing(uid));
  if (decision.kind === 'start') return false;
  scope.log.debug({ behind: decision.behind }, 'static pod waits for another pod of its full name to terminate');
  return true;
}

/**
 * The admission verdict: a pod the kernel has not admitted yet (and that is not already
 * finished) goes through the admitter (the admit handlers, in creation order); a decision
 * stands until the pod is forgotten.
 */
function admissionVerdict(deps: PodReconcilerOptions, scope: RunScope, pod: V1Pod): AdmitDecision {
  const { admitter, lifecycle } = deps;
  const known = admitter.rejectionOf(scope.key.uid);
  if (known !== undefined) return { kind: 'rejected', rejection: known };
  if (lifecycle.get(scope.key.uid) !== undefined || isTerminalPhase(pod)) return { kind: 'admitted' };
  // A restarted agent admits the pod as it was allocated, not with a resize still pending in its spec.
  const decision = admitter.admit(deps.resizer?.allocatedPod(pod) ?? pod);
  if (decision.kind === 'rejected') scope.log.info({ reason: decision.rejection.reason, message: decision.rejection.message }, 'pod rejected at admission');
  return decision;
}

/**
 * Whether the pod must only be stopped: a rejection at admission, a terminal phase, an exceeded
 * deadline (recorded as an event), or a UID that already started terminating or is to restart —
 * it never runs again (before it is forgotten), even before the API shows a terminal phase. `terminalReason` is what a Failed status
 * says (the rejection, or DeadlineExceeded).
 */
function stopDecision(deps: PodReconcilerOptions, key: PodKey, pod: V1Pod, rejection: Rejection | undefined): StopDecision {
  const deadlineMs = activeDeadlineRemainingMs(pod, deps.clock.now());
  const deadlineExceeded = rejection === undefined && deadlineMs !== undefined && deadlineMs <= 0 && !isTerminalPhase(pod);
  if (deadlineExceeded) deps.events.record(pod, { type: 'Warning', ...DEADLINE_EXCEEDED });
  const terminating = heldToStop(deps, key.uid);
  const kill = rejection === undefined ? deps.evictions?.of(key.uid) : undefined;
  const terminalReason = terminalReasonOf(rejection, kill, deadlineExceeded);
  const mustStop = rejection !== undefined || kill !== undefined || isTerminalPhase(pod) || deadlineExceeded || terminating;
  return { mustStop, deadlineExceeded, terminalReason, killGraceSeconds: kill?.gracePeriodSeconds };
}

/**
 * Whether the kernel holds the pod to stopping: it started terminating, or is to restart (whose
 * runs take the restart path, `restart-pod.ts`; this guards a sync that raced the request).
 */
function heldToStop(deps: PodReconcilerOptions, uid: string): boolean {
  const record = deps.lifecycle.get(uid);
  return record !== undefined && (record.phase !== 'syncing' || record.restartRequested === true);
}

/** Admits a pod that is to run, or moves one that must stop to terminating; returns the grace period to kill with. */
function enterLifecycle(deps: PodReconcilerOptions, key: PodKey, pod: V1Pod, stop: StopDecision): number {
  if (stop.mustStop) return deps.lifecycle.terminate(key, Math.min(podGracePeriodSeconds(pod), stop.killGraceSeconds ?? Number.POSITIVE_INFINITY));
  // As the kubelet's pod worker: a pod's containers are counted when its worker first starts.
  const first = deps.lifecycle.get(key.uid) === undefined;
  if (deps.lifecycle.admit(key) && first) deps.podFlows?.podAdmitted(pod);
  return podGracePeriodSeconds(pod);
}

/** Runs the plan; a failed setup step is returned (status is still written), a cancellation thrown. */
async function executePlan(
  deps: PodReconcilerOptions,
  scope: RunScope,
  p: { pod: V1Pod; plan: PodActions; observed: ObservedPod; gracePeriodSeconds: number },
): Promise<{ result: ExecuteResult; setupError?: unknown }> {
  try {
    const result = await deps.executor.execute(p.pod, p.plan, p.observed, { gracePeriodSeconds: p.gracePeriodSeconds, ...(scope.signal === undefined ? {} : { signal: scope.signal }) });
    return { result };
  } catch (error) {
    if (isCancellation(error, scope.signal)) throw error;
    scope.log.debug({ err: error }, 'pod sync failed');
    return { result: { failures: [] }, setupError: error };
  }
}

/**
 * Leaves a new pod Pending (containers waiting in ContainerCreating) while the agent is paused.
 * No requeue: unpausing resyncs every pod, and the periodic resync is the safety net.
 */
function hold(deps: PodReconcilerOptions, run: { pod: V1Pod; observed: ObservedPod; log: Logger }): void {
  run.log.info('nodelet is paused: not starting the pod');
  deps.events.record(run.pod, {
    type: 'Normal',
    reason: 'NodeletPaused',
    message: 'nodelet on this node is paused (NodeAgent spec.paused): the pod starts once it is unpaused',
  });
  deps.status.setPodStatus(run.pod, statusOf(deps, run.pod, run.observed, { podIsTerminal: false }));
}

function reportSandboxChange(deps: PodReconcilerOptions, pod: V1Pod, plan: PodActions, observed: ObservedPod): void {
  if (plan.killPod && plan.createSandbox && observed.sandboxes.length > 0) {
    deps.events.record(pod, { type: 'Normal', reason: 'SandboxChanged', message: 'Pod sandbox changed, it will be killed and re-created.' });
  }
}

/**
 * Whether a run starting from `after` would leave the runtime as it is. Only then may PLEG drop
 * the change to that state: a run plans from what it saw before it acted, so a state its own
 * actions reached can still call for more (the next sidecar or init container once this one
 * runs), and that next step is taken by the run PLEG's change starts.
 */
function nothingLeftToDo(deps: PodReconcilerOptions, pod: V1Pod, after: ObservedPod, mustStop: boolean): boolean {
  return !changesRuntime(computePodActions({ pod, observed: after, terminating: mustStop, probes: probeVerdictsOf(deps, pod, after), restartAllContainers: restartsAllNow(deps, pod, after, mustStop) }));
}

/** Notes `after` as this run's last word when the run went well and a next run would change nothing. */
function reportIfSettled(deps: PodReconcilerOptions, run: { pod: V1Pod; after: ObservedPod; mustStop: boolean; setupError: unknown }): void {
  if (run.setupError === undefined && nothingLeftToDo(deps, run.pod, run.after, run.mustStop)) reported(deps, run.after);
}
