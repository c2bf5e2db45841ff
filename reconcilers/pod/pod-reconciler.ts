/**
 * Reconcile(uid): level-triggered and idempotent. The request names a pod by UID and nothing else;
 * the reconciler reads the desired pod (the pod source's store) and the runtime, and decides.
 *
 *   desired pod ──┐
 *                 ├─ computePodActions ─► executor ─► observe again ─► generatePodStatus ─► status writer
 *   runtime ──────┘                      (only when a runtime action ran: else the first observation,
 *                                         as the kubelet reports what its sync started from)
 *
 * The lifecycle of a UID (monotonic, kept by the pod lifecycle kernel, `lifecycle/pod-lifecycle.ts`,
 * which tells every per-pod manager about each step):
 *
 *   admitted/syncing ──(deletionTimestamp | activeDeadlineSeconds | eviction | terminal phase)──► terminating ──► terminated ──(gone from every source)──► forgotten
 *
 * - admission: a pod the kernel has not admitted yet (new, or first seen since the agent started)
 *   goes through the node's admit handlers (`admission/`) first, in creation order against the
 *   pods already admitted. A rejected pod never gets a sandbox: it moves straight to terminating
 *   → terminated and is reported Failed with the handler's reason (e.g. `SysctlForbidden`,
 *   `OutOfcpu`, `NodeAffinity`) and a Warning event, once. Until the Node object is known,
 *   nothing is decided and the pod waits (requeued).
 * - syncing: the pod exists and is not being deleted. Plan, execute, report. Containers that wait
 *   out a backoff (CrashLoopBackOff, ImagePullBackOff) are reported and the pod requeued for when
 *   the backoff ends. A pod past its `activeDeadlineSeconds` is killed and Failed with
 *   `DeadlineExceeded`; a pod the eviction manager chose (`lifecycle/evictions.ts`) is killed with
 *   its eviction grace period and Failed with `Evicted` and a `DisruptionTarget` condition. A pod whose API phase is terminal is only ever killed: a finished pod
 *   never starts again.
 * - terminating: the pod has a deletionTimestamp. Stop everything within the grace period — which
 *   can only shrink: a later, shorter grace period cuts a running stop short — report the final
 *   (terminal) status, remove the sandbox and volumes, then delete the pod object (UID
 *   precondition), so when `kubectl delete` returns nothing of the pod is left in the runtime.
 * - gone: no pod source has this UID any more (deleted while the agent was down, force-deleted,
 *   or its deletion completed). Stop and remove whatever the runtime still has of it, with the
 *   preStop hooks kept on its containers (the pod restored from its containers, `restored-pod.ts`,
 *   as the kubelet does) and the kubelet's grace period: 1 s for a pod this agent never synced (an
 *   orphan), else the final object's deletion grace period when known (a force deletion's 0, so
 *   1 s), else the one recorded on its containers; then forget it: every per-pod manager drops its
 *   state. Only once every pod source has synced: before that, absence proves nothing, and a
 *   restarted agent must not tear down the pods it is about to find again.
 *
 * A failed step is thrown after the status is written, so the queue retries with backoff. A
 * cancelled run (the queue's signal: lost lock, shutdown) stops at the next runtime call and
 * writes nothing: the next owner of the UID looks again.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions, RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import { computePodActions, type PodActions } from '../runtime/compute-pod-actions.js';
import { isEvictedStatus, rejectedStatusMessage, type AdmitDecision, type PodAdmitter, type Rejection } from '../admission/index.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { ExecuteResult, PodActionsExecutor } from '../runtime/execute-pod-actions.js';
import type { NodeKill, PodEvictions } from '../lifecycle/evictions.js';
import type { PodLifecycle } from '../lifecycle/pod-lifecycle.js';
import { onlyForgettingLeft } from '../lifecycle/removed-pods.js';
import { emptyObservation, hasRunningParts, type ObservedPod } from '../model/observed-pod.js';
import { observeKnownPod, observePod, type KnownRuntimeObjects } from '../runtime/observe-pod.js';
import { restorePod } from '../runtime/restored-pod.js';
import { observedFingerprint, type RuntimeSightingsWriter } from '../model/runtime-sightings.js';
import { ANNOTATION_GRACE_PERIOD, intAnnotation } from '../model/runtime-labels.js';
import { podGracePeriodSeconds } from '../container/sandbox-config.js';
import type { ContainerStartFailures } from '../runtime/start-failures.js';
import { generatePodStatus } from '../status/generate-pod-status.js';
import { probeVerdicts, type ProbeFailures } from '../probes/probe-failures.js';
import type { ContainerResultsReader } from '../status/container-readiness.js';
import type { StatusWriter } from '../status/status-manager.js';
import { isCancellation, type ContainerStartError } from '../model/sync-errors.js';
import type { VolumeManager } from '../volumes/index.js';
import { NO_RESIZE, type ResizeActions } from '../resize/compute-resize-actions.js';
import type { PodResizer } from '../resize/pod-resizer.js';

/** Where the reconciler reads desired pods: the merged store of every pod source. */
export interface PodStore {
  /** The newest desired object of a pod, from whichever source has it; undefined when none has. */
  get(uid: string): V1Pod | undefined;
  /**
   * True once every source has delivered a full list. Before that, a UID missing from the store
   * proves nothing (the agent just started, or the API server is down), so nothing is torn down.
   * With a UID: whether that UID's absence can be trusted, which needs only the source that last
   * had it to be synced (a pod removed from its source is gone whatever the others do); a UID no
   * source was seen having still needs every source (orphan cleanup).
   */
  synced(uid?: string): boolean;
  /**
   * Asks every source's origin whether the pod is really gone (a cache can lag behind a fresh
   * list); false when any still has it or cannot answer. Asked before anything that still exists
   * in the runtime is torn down.
   */
  confirmGone(key: PodKey): Promise<boolean>;
  /**
   * The deletion grace period the pod's final object carried when its source removed it, if
   * known. A force deletion writes grace 0 just before it removes the pod: a reconcile that sees
   * only the absence still stops the pod with it (the kubelet handles the removal with that
   * final object). Absent or undefined: not known.
   */
  finalDeletionGraceSeconds?(uid: string): number | undefined;
}

/**
 * Asked before the first sandbox of a pod is created: may new pods start now? Pods that already
 * have a sandbox are never held (their containers keep restarting), nor are deletions.
 */
export interface PodAdmission {
  /** True while new pods must not start (the NodeAgent's `spec.paused`). */
  isPaused(): boolean;
}

export interface PodReconcilerOptions {
  readonly store: PodStore;
  readonly runtime: RuntimeService;
  readonly executor: PodActionsExecutor;
  readonly status: StatusWriter;
  readonly volumes: VolumeManager;
  readonly events: EventRecorder;
  /** The per-UID lifecycle; the reconciler moves it forward, the managers registered on it follow. */
  readonly lifecycle: PodLifecycle;
  /** Why containers could not start (a per-pod manager registered on the lifecycle). */
  readonly startFailures: ContainerStartFailures;
  readonly nodeName: string;
  readonly nodeIp: string;
  /** e.g. `containerd`, from the runtime's version. */
  readonly runtimeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Holds new pods while paused; absent means never paused. */
  readonly admission?: PodAdmission;
  /** The node's admit handlers and the rejections they decided (a per-pod manager). */
  readonly admitter: PodAdmitter;
  /** Probe results the status reports (the status manager's store). */
  readonly probeResults: ContainerResultsReader;
  /** Liveness and startup failures the probers recorded: their containers are killed. */
  readonly probeFailures: ProbeFailures;
  /** Pods the node decided to stop (eviction under pressure): killed with their grace, reported Failed. */
  readonly evictions?: PodEvictions;
  /** In-place resize: allocation, actuation and its conditions; resources are never resized when absent. */
  readonly resizer?: PodResizer;
  /** When the agent (its prober) started: containers running before it keep a Ready pod's readiness until probed. */
  readonly agentStartedAtMs?: number;
  /** Told the runtime state each run reported, so PLEG drops the echo of the run's own work; absent: not told. */
  readonly sightings?: RuntimeSightingsWriter;
}

/** What the queue hears back: run again after a delay, or nothing to do until the next event. */
export interface ReconcileOutcome {
  readonly requeueAfterMs?: number;
}

/** What one run is given besides the pod's key. */
export interface ReconcileRun {
  /** Aborted when the run must stop (the queue lost the job's lock, or the agent is stopping). */
  readonly signal?: AbortSignal;
}

/** How long to wait before looking again at a pod the store cannot vouch for yet. */
const UNSYNCED_RETRY_MS = 2000;

/** How long a pod waits for admission to be decidable (the Node object to be known). */
const ADMISSION_RETRY_MS = 1000;

/** How soon a pod whose resize was just actuated is looked at again (to see it complete, as the kubelet's re-inspect). */
const RESIZE_RECHECK_MS = 1000;

/** Grace period for a pod the API no longer has: the longest recorded on its containers, else 2 s. */
const ORPHAN_GRACE_SECONDS = 2;

/**
 * Grace period for a pod found in the runtime that this agent never synced (deleted while the agent
 * was down): the kubelet kills such orphans with a 1 s override (`HandlePodCleanups`), preStop
 * hooks bounded by it.
 */
const UNKNOWN_ORPHAN_GRACE_SECONDS = 1;

const DEADLINE_EXCEEDED = { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' } as const;

function isTerminalPhase(pod: V1Pod): boolean {
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
function stopsOnly(plan: PodActions): boolean {
  return (plan.killPod || plan.containersToKill.length > 0) && !plan.createSandbox && plan.containersToStart.length === 0;
}

/** How a syncing run's status is generated: not terminal yet, as allocated, with the reason it must stop, if any. */
function statusHowOf(allocated: V1Pod, stop: StopDecision): StatusHow {
  return { podIsTerminal: false, allocated, ...(stop.terminalReason === undefined ? {} : { terminalReason: stop.terminalReason }) };
}

/** Requeue for the earliest backoff end or deadline; throw the first failure that is not a backoff. */
function outcomeOf(failures: readonly ContainerStartError[], deadlineMs: number | undefined): ReconcileOutcome {
  const hard = failures.find((f) => f.retryAfterMs === undefined);
  if (hard !== undefined) throw hard;
  const waits = [...failures.map((f) => f.retryAfterMs ?? 0), ...(deadlineMs !== undefined && deadlineMs > 0 ? [deadlineMs] : [])];
  return waits.length === 0 ? {} : { requeueAfterMs: Math.max(1, Math.min(...waits)) };
}

/** What {@link PodReconciler.stopDecision} decides. */
interface StopDecision {
  readonly mustStop: boolean;
  readonly deadlineExceeded: boolean;
  readonly terminalReason: TerminalReason | undefined;
  /** A node-initiated stop's grace period (eviction), at most the pod's own. */
  readonly killGraceSeconds: number | undefined;
}

/** What a Failed status says; `disruption` adds the kubelet's DisruptionTarget condition (eviction). */
interface TerminalReason {
  readonly reason: string;
  readonly message: string;
  readonly disruption?: boolean;
}

/** The Failed status of a rejected, evicted or timed-out pod (in that order of precedence). */
function terminalReasonOf(rejection: Rejection | undefined, kill: NodeKill | undefined, deadlineExceeded: boolean): TerminalReason | undefined {
  if (rejection !== undefined) return { reason: rejection.reason, message: rejectedStatusMessage(rejection.message) };
  if (kill !== undefined) return { reason: kill.reason, message: kill.message, disruption: kill.disruptionTarget !== false };
  return deadlineExceeded ? DEADLINE_EXCEEDED : undefined;
}

/** Throws a failed setup step's error (after the status was written), so the queue retries. */
function throwSetupError(setupError: unknown): void {
  if (setupError instanceof Error) throw setupError;
  if (setupError !== undefined) throw new Error('pod sync failed', { cause: setupError });
}

/** A pod whose resize was just actuated is looked at again soon, to see it complete. */
function withResizeRecheck(outcome: ReconcileOutcome, resized: boolean): ReconcileOutcome {
  return resized ? { requeueAfterMs: Math.min(outcome.requeueAfterMs ?? RESIZE_RECHECK_MS, RESIZE_RECHECK_MS) } : outcome;
}

/** How a status is generated: terminal or not, why, and the pod as allocated when it differs from the desired one. */
interface StatusHow {
  readonly podIsTerminal: boolean;
  readonly terminalReason?: TerminalReason;
  readonly allocated?: V1Pod;
}

/** Whether carrying out `plan` touches the runtime (stops, creates or starts anything). */
function changesRuntime(plan: PodActions): boolean {
  return plan.killPod || plan.createSandbox || plan.containersToKill.length > 0 || plan.containersToStart.length > 0;
}

/** The objects of an observation, by ID. */
function knownObjectsOf(observed: ObservedPod): KnownRuntimeObjects {
  return { sandboxIds: observed.sandboxes.map((s) => s.id), containers: observed.containers.map((c) => ({ id: c.id, podSandboxId: c.sandboxId })) };
}

/** Every object a run that went through cleanly leaves the pod with: what it started from, and what it started. */
function knownAfter(observed: ObservedPod, result: ExecuteResult): KnownRuntimeObjects {
  const started = result.started;
  const { sandboxIds, containers } = knownObjectsOf(observed);
  if (started === undefined) return { sandboxIds, containers };
  return {
    sandboxIds: sandboxIds.includes(started.sandboxId) ? sandboxIds : [...sandboxIds, started.sandboxId],
    containers: [...containers, ...started.containerIds.map((id) => ({ id, podSandboxId: started.sandboxId }))],
  };
}

function callOptionsOf(scope: RunScope): CallOptions {
  return scope.signal === undefined ? {} : { signal: scope.signal };
}

function hasAnything(observed: ObservedPod): boolean {
  return observed.sandboxes.length > 0 || observed.containers.length > 0;
}

/** One reconcile's view: the pod's key, its logger and the run's cancellation signal. */
interface RunScope {
  readonly key: PodKey;
  readonly log: Logger;
  readonly signal: AbortSignal | undefined;
}

export class PodReconciler {
  constructor(private readonly options: PodReconcilerOptions) {}

  /** Reconciles one pod. Throws when a step failed (after reporting status), so the caller retries. */
  async reconcile(key: PodKey, run: ReconcileRun = {}): Promise<ReconcileOutcome> {
    const scope: RunScope = { key, log: this.options.logger.child({ podUID: key.uid, pod: podDisplayName(key) }), signal: run.signal };
    // Removed from the runtime and its object deleted by this process: nothing is left to do but
    // forget it, which housekeeping does (a run queued by an event of its last moments ends here).
    if (this.options.lifecycle.get(key.uid)?.objectDeletedAt !== undefined) return {};
    const pod = this.options.store.get(key.uid);
    const observed = pod === undefined && this.removedHere(key.uid) ? emptyObservation(key.uid) : await this.observe(scope);
    if (pod === undefined) {
      if (!this.options.store.synced(key.uid)) {
        scope.log.debug('pod sources not synced yet: not deciding whether the pod is gone');
        return { requeueAfterMs: UNSYNCED_RETRY_MS };
      }
      if (hasAnything(observed) && !(await this.options.store.confirmGone(key))) {
        scope.log.warn('the pod source has not caught up with a pod its origin still has (or cannot be asked): not tearing it down');
        return { requeueAfterMs: UNSYNCED_RETRY_MS };
      }
      await this.cleanUpGone(scope, observed);
      return {};
    }
    if (pod.metadata?.deletionTimestamp !== undefined) {
      await this.terminate(scope, pod, observed);
      return {};
    }
    return this.sync(scope, pod, observed);
  }

  /**
   * The runtime after a run: read again when the run acted on it; else what the run started from
   * is what there is (a change made by someone else meanwhile reaches PLEG, which syncs the pod
   * again), as the kubelet reports the status its sync started with. A run that went through
   * cleanly knows every object the pod has (what it started from, and what it started: nothing
   * else creates them), so it reads their statuses by ID without listing; after a failure (a
   * container created but not started, a sandbox without its status) the runtime is listed.
   */
  private observeAfter(scope: RunScope, run: { plan: PodActions; resized: boolean; observed: ObservedPod; result: ExecuteResult; setupError: unknown }): Promise<ObservedPod> {
    if (!changesRuntime(run.plan) && !run.resized) return Promise.resolve(run.observed);
    if (run.setupError !== undefined || run.result.failures.length > 0) return this.observe(scope);
    return observeKnownPod(this.options.runtime, scope.key.uid, knownAfter(run.observed, run.result), callOptionsOf(scope));
  }

  /** The objects of `observed` as they are now, read by ID (for a run that created nothing). */
  private observeKnown(scope: RunScope, observed: ObservedPod): Promise<ObservedPod> {
    return observeKnownPod(this.options.runtime, scope.key.uid, knownObjectsOf(observed), callOptionsOf(scope));
  }

  /**
   * Whether this process removed everything of the pod from the runtime (it finished terminating
   * here): then a pod gone from its sources has nothing left to find, and the runtime is not read
   * again. After an agent restart nothing is known, and the runtime is read as ever.
   */
  private removedHere(uid: string): boolean {
    return this.options.lifecycle.get(uid)?.removedAt !== undefined;
  }

  private observe(scope: RunScope): Promise<ObservedPod> {
    return observePod(this.options.runtime, scope.key.uid, this.options.nodeName, callOptionsOf(scope));
  }

  private async sync(scope: RunScope, pod: V1Pod, observed: ObservedPod): Promise<ReconcileOutcome> {
    const verdict = this.admissionVerdict(scope, pod);
    if (verdict.kind === 'deferred') {
      scope.log.debug({ why: verdict.why }, 'admission cannot decide yet: the pod waits');
      return { requeueAfterMs: ADMISSION_RETRY_MS };
    }
    const stop = this.stopDecision(scope.key, pod, verdict.kind === 'rejected' ? verdict.rejection : undefined);
    const resize = this.resizeStep(pod, observed, stop.mustStop || verdict.kind !== 'admitted');
    const plan = computePodActions({ pod: resize.pod, observed, terminating: stop.mustStop, probes: this.probeVerdictsOf(resize.pod, observed), resizeRestarts: resize.actions.restarts });
    scope.log.debug({ plan }, 'computed pod actions');
    if (!stop.mustStop && plan.createSandbox && observed.sandboxes.length === 0 && this.options.admission?.isPaused() === true) {
      this.hold(pod, observed, scope.log);
      return {};
    }
    const gracePeriodSeconds = this.enterLifecycle(scope.key, pod, stop);
    this.reportSandboxChange(pod, plan, observed);
    const how = statusHowOf(resize.pod, stop);
    if (stopsOnly(plan)) this.writeStatus(scope, pod, observed, how);
    const { result, setupError } = await this.executePlan(scope, { pod: resize.pod, plan, observed, gracePeriodSeconds });
    this.options.startFailures.record(scope.key.uid, plan.containersToStart.map((t) => t.name), result.failures);
    const resized = await this.actuateResize(scope, resize, setupError === undefined && !stop.mustStop);
    const after = await this.observeAfter(scope, { plan, resized, observed, result, setupError });
    const written = this.writeStatus(scope, pod, after, how);
    const left = await this.finishIfStopped(scope, pod, { after, written, mustStop: stop.mustStop });
    this.reportIfSettled({ pod: resize.pod, after: left, mustStop: stop.mustStop, setupError });
    throwSetupError(setupError);
    return withResizeRecheck(outcomeOf(result.failures, this.deadlineToWaitFor(pod, stop, written)), resized || resize.actions.restarts.size > 0);
  }

  /**
   * A pod that must stop or whose status is terminal, with nothing running: its termination
   * completes. An evicted pod whose eviction the API already shows (the object this run started
   * from) also loses its dead containers and their logs, as the kubelet's `HandlePodReconcile`
   * removes every dead container of an evicted pod once its status is synced: the status keeps
   * their terminated states (`keptTerminated`), read from the API. Returns what is left in the runtime.
   */
  private async finishIfStopped(scope: RunScope, pod: V1Pod, run: { after: ObservedPod; written: V1PodStatus; mustStop: boolean }): Promise<ObservedPod> {
    if (!(run.mustStop || isTerminalPhase({ status: run.written })) || hasRunningParts(run.after)) return run.after;
    await this.completeTermination(scope.key, pod);
    if (!isEvictedStatus(pod.status) || !run.after.containers.some((c) => c.state === 'CONTAINER_EXITED')) return run.after;
    return this.options.executor.removeDeadContainers(run.after, scope.signal);
  }

  /**
   * How long until the deadline this run must wake up for, from the start time in the status it
   * wrote: the API object's, or the one this run stamped on a pod that had none (its first run),
   * as the kubelet's deadline check reads its status manager's status. The echo of that write may
   * arrive while this run still holds the UID, and is then dropped.
   */
  private deadlineToWaitFor(pod: V1Pod, stop: StopDecision, written: V1PodStatus): number | undefined {
    if (stop.deadlineExceeded) return undefined;
    return activeDeadlineRemainingMs({ ...pod, status: written }, this.options.clock.now());
  }

  /** Applies the resize's in-place updates when the pod still runs and its setup went well; true when any was made. */
  private async actuateResize(scope: RunScope, resize: { pod: V1Pod; actions: ResizeActions }, runs: boolean): Promise<boolean> {
    if (!runs) return false;
    return (await this.options.resizer?.actuate(resize.pod, resize.actions, scope.signal)) === true;
  }

  /**
   * The pod as allocated and the resize it asks for (`resize/pod-resizer.ts`): an admitted, running
   * pod's resize is allocated or left pending and its progress noted before anything runs; a pod
   * that only stops, or is not admitted, runs as already allocated and asks for nothing.
   */
  private resizeStep(pod: V1Pod, observed: ObservedPod, stopsOnly: boolean): { pod: V1Pod; actions: ResizeActions } {
    const resizer = this.options.resizer;
    if (resizer === undefined) return { pod, actions: NO_RESIZE };
    if (stopsOnly) return { pod: resizer.allocatedPod(pod), actions: NO_RESIZE };
    const allocated = resizer.allocate(pod);
    resizer.progress(allocated, observed);
    return { pod: allocated, actions: resizer.plan(allocated, observed) };
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
  private async completeTermination(key: PodKey, pod: V1Pod): Promise<void> {
    const { lifecycle } = this.options;
    if (lifecycle.get(key.uid)?.phase === 'terminated') return;
    lifecycle.terminate(key, podGracePeriodSeconds(pod));
    await this.options.volumes.teardown(key.uid);
    lifecycle.terminated(key);
  }

  /** The probers' verdicts on the running containers; failures of instances that are gone are dropped. */
  private probeVerdictsOf(pod: V1Pod, observed: ObservedPod): ReturnType<typeof probeVerdicts> {
    const { probeFailures, probeResults } = this.options;
    probeFailures.retainOnly(observed.uid, new Set(observed.containers.map((c) => c.id)));
    return probeVerdicts(pod, observed, probeFailures.of(observed.uid), probeResults.resultsOf(observed.uid));
  }

  /**
   * The admission verdict: a pod the kernel has not admitted yet (and that is not already
   * finished) goes through the admitter (the admit handlers, in creation order); a decision
   * stands until the pod is forgotten.
   */
  private admissionVerdict(scope: RunScope, pod: V1Pod): AdmitDecision {
    const { admitter, lifecycle } = this.options;
    const known = admitter.rejectionOf(scope.key.uid);
    if (known !== undefined) return { kind: 'rejected', rejection: known };
    if (lifecycle.get(scope.key.uid) !== undefined || isTerminalPhase(pod)) return { kind: 'admitted' };
    // A restarted agent admits the pod as it was allocated, not with a resize still pending in its spec.
    const decision = admitter.admit(this.options.resizer?.allocatedPod(pod) ?? pod);
    if (decision.kind === 'rejected') scope.log.info({ reason: decision.rejection.reason, message: decision.rejection.message }, 'pod rejected at admission');
    return decision;
  }

  /**
   * Whether the pod must only be stopped: a rejection at admission, a terminal phase, an exceeded
   * deadline (recorded as an event), or a UID that already started terminating — it never runs
   * again, even before the API shows a terminal phase. `terminalReason` is what a Failed status
   * says (the rejection, or DeadlineExceeded).
   */
  private stopDecision(key: PodKey, pod: V1Pod, rejection: Rejection | undefined): StopDecision {
    const deadlineMs = activeDeadlineRemainingMs(pod, this.options.clock.now());
    const deadlineExceeded = rejection === undefined && deadlineMs !== undefined && deadlineMs <= 0 && !isTerminalPhase(pod);
    if (deadlineExceeded) this.options.events.record(pod, { type: 'Warning', ...DEADLINE_EXCEEDED });
    const terminating = (this.options.lifecycle.get(key.uid)?.phase ?? 'syncing') !== 'syncing';
    const kill = rejection === undefined ? this.options.evictions?.of(key.uid) : undefined;
    const terminalReason = terminalReasonOf(rejection, kill, deadlineExceeded);
    const mustStop = rejection !== undefined || kill !== undefined || isTerminalPhase(pod) || deadlineExceeded || terminating;
    return { mustStop, deadlineExceeded, terminalReason, killGraceSeconds: kill?.gracePeriodSeconds };
  }

  /** Admits a pod that is to run, or moves one that must stop to terminating; returns the grace period to kill with. */
  private enterLifecycle(key: PodKey, pod: V1Pod, stop: StopDecision): number {
    if (stop.mustStop) return this.options.lifecycle.terminate(key, Math.min(podGracePeriodSeconds(pod), stop.killGraceSeconds ?? Number.POSITIVE_INFINITY));
    this.options.lifecycle.admit(key);
    return podGracePeriodSeconds(pod);
  }

  /** Runs the plan; a failed setup step is returned (status is still written), a cancellation thrown. */
  private async executePlan(scope: RunScope, p: { pod: V1Pod; plan: PodActions; observed: ObservedPod; gracePeriodSeconds: number }): Promise<{ result: ExecuteResult; setupError?: unknown }> {
    try {
      const result = await this.options.executor.execute(p.pod, p.plan, p.observed, { gracePeriodSeconds: p.gracePeriodSeconds, ...(scope.signal === undefined ? {} : { signal: scope.signal }) });
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
  private hold(pod: V1Pod, observed: ObservedPod, log: Logger): void {
    log.info('nodelet is paused: not starting the pod');
    this.options.events.record(pod, {
      type: 'Normal',
      reason: 'NodeletPaused',
      message: 'nodelet on this node is paused (NodeAgent spec.paused): the pod starts once it is unpaused',
    });
    this.options.status.setPodStatus(pod, this.statusOf(pod, observed, { podIsTerminal: false }));
  }

  private reportSandboxChange(pod: V1Pod, plan: PodActions, observed: ObservedPod): void {
    if (plan.killPod && plan.createSandbox && observed.sandboxes.length > 0) {
      this.options.events.record(pod, { type: 'Normal', reason: 'SandboxChanged', message: 'Pod sandbox changed, it will be killed and re-created.' });
    }
  }

  private async terminate(scope: RunScope, pod: V1Pod, observed: ObservedPod): Promise<void> {
    const { key, log, signal } = scope;
    const { lifecycle } = this.options;
    const gracePeriodSeconds = lifecycle.terminate(key, podGracePeriodSeconds(pod));
    log.info({ gracePeriodSeconds }, 'terminating pod');
    await this.options.executor.killPod({
      pod,
      observed,
      gracePeriodSeconds,
      // A newer object with a shorter grace period cuts the wait short; the kernel keeps the shortest.
      currentGracePeriodSeconds: () => lifecycle.terminate(key, podGracePeriodSeconds(this.options.store.get(key.uid) ?? pod)),
      reason: 'pod is being deleted',
      ...(signal === undefined ? {} : { signal }),
    });
    // Killing creates nothing: the statuses of what the run started from are all there is.
    const after = await this.observeKnown(scope, observed);
    const done = !hasRunningParts(after);
    if (done) lifecycle.terminated(key);
    this.writeStatus(scope, pod, after, { podIsTerminal: done });
    this.reported(after);
    if (!done) throw new Error(`pod ${key.uid} still has running parts after being killed`);
    await this.options.executor.removePod(after, signal);
    lifecycle.removed(key);
    this.reported(emptyObservation(key.uid));
    await this.options.volumes.cleanup(key.uid);
    if (await this.options.status.deletePod(pod)) lifecycle.objectDeleted(key);
  }

  private async cleanUpGone(scope: RunScope, observed: ObservedPod): Promise<void> {
    const { key, log, signal } = scope;
    const { lifecycle } = this.options;
    if (observed.sandboxes.length > 0 || observed.containers.length > 0) {
      const grace = lifecycle.terminate(key, this.goneGraceSeconds(key, observed));
      log.info({ gracePeriodSeconds: grace }, 'removing pod that no longer exists in any pod source');
      // The kubelet still runs preStop hooks (and records Killing) for a pod the API dropped at once.
      const pod = restorePod(key, observed.containers, grace);
      await this.options.executor.killPod({ pod, observed, gracePeriodSeconds: grace, reason: 'pod no longer exists', ...(signal === undefined ? {} : { signal }) });
      await this.options.executor.removePod(await this.observeKnown(scope, observed), signal);
    }
    // Whatever there was is removed (each removal succeeded, or the run threw): PLEG's "vanished" is this run's work.
    this.reported(emptyObservation(key.uid));
    await this.options.volumes.cleanup(key.uid);
    lifecycle.forget(key);
  }

  /**
   * Forgets every pod this process removed from the runtime that no pod source has any more
   * (`lifecycle/removed-pods.ts`): its directory is removed (again: nothing of it may outlive it)
   * and every per-pod manager drops it. The periodic housekeeping calls this; events about such a
   * pod start no reconcile. A UID with a run in flight is left to that run. A pod whose directory
   * cannot be removed stays (logged) for the next sweep. Resolves with the number forgotten.
   */
  async forgetRemovedPods(runInFlight: (uid: string) => boolean): Promise<number> {
    const { lifecycle, store, volumes, logger } = this.options;
    let forgotten = 0;
    for (const key of lifecycle.removedKeys()) {
      const facts = { record: lifecycle.get(key.uid), desired: store.get(key.uid), absenceTrusted: store.synced(key.uid) };
      if (!onlyForgettingLeft(facts) || runInFlight(key.uid)) continue;
      try {
        await volumes.cleanup(key.uid);
      } catch (err: unknown) {
        logger.warn({ err, podUID: key.uid, pod: podDisplayName(key) }, "could not remove a deleted pod's directory; the next housekeeping retries");
        continue;
      }
      lifecycle.forget(key);
      forgotten++;
    }
    return forgotten;
  }

  /**
   * Whether a run starting from `after` would leave the runtime as it is. Only then may PLEG drop
   * the change to that state: a run plans from what it saw before it acted, so a state its own
   * actions reached can still call for more (the next sidecar or init container once this one
   * runs), and that next step is taken by the run PLEG's change starts.
   */
  private nothingLeftToDo(pod: V1Pod, after: ObservedPod, mustStop: boolean): boolean {
    return !changesRuntime(computePodActions({ pod, observed: after, terminating: mustStop, probes: this.probeVerdictsOf(pod, after) }));
  }

  /** Notes `after` as this run's last word when the run went well and a next run would change nothing. */
  private reportIfSettled(run: { pod: V1Pod; after: ObservedPod; mustStop: boolean; setupError: unknown }): void {
    if (run.setupError === undefined && this.nothingLeftToDo(run.pod, run.after, run.mustStop)) this.reported(run.after);
  }

  /** Notes the runtime state this run reported (its status was written from it, or it removed everything). */
  private reported(observed: ObservedPod): void {
    this.options.sightings?.reported(observed.uid, observedFingerprint(observed));
  }

  /**
   * The grace period of a pod no source has any more, as the kubelet's: one it never synced (an
   * orphan found after a restart) gets 1 s; one it ran gets its final object's deletion grace
   * period when known (a force deletion's 0), else the longest recorded on its containers.
   */
  private goneGraceSeconds(key: PodKey, observed: ObservedPod): number {
    if (this.options.lifecycle.get(key.uid) === undefined) return UNKNOWN_ORPHAN_GRACE_SECONDS;
    const recorded = Math.max(ORPHAN_GRACE_SECONDS, ...observed.containers.map((c) => intAnnotation(c.annotations, ANNOTATION_GRACE_PERIOD, 0)));
    return Math.min(recorded, this.options.store.finalDeletionGraceSeconds?.(key.uid) ?? Number.POSITIVE_INFINITY);
  }

  /**
   * Generates the pod's status and hands it to the status manager, which writes it in the
   * background (the run does not wait for the API server); returns it.
   */
  private writeStatus(scope: RunScope, pod: V1Pod, observed: ObservedPod, how: StatusHow): V1PodStatus {
    // A cancelled run hands over nothing: the run that replaced it reports the newer state.
    scope.signal?.throwIfAborted();
    const status = this.statusOf(pod, observed, how);
    this.options.status.setPodStatus(pod, status);
    return status;
  }

  private statusOf(pod: V1Pod, observed: ObservedPod, how: StatusHow): ReturnType<typeof generatePodStatus> {
    const now = new Date(Math.floor(this.options.clock.now() / 1000) * 1000);
    return generatePodStatus({
      // The status reports the pod as allocated (its containers' allocatedResources and resources).
      pod: how.allocated ?? pod,
      observed,
      nodeIp: this.options.nodeIp,
      runtimeName: this.options.runtimeName,
      now,
      startFailures: this.options.startFailures.of(observed.uid),
      podIsTerminal: how.podIsTerminal,
      ...(how.terminalReason === undefined ? {} : { terminalReason: how.terminalReason }),
      probeResults: this.options.probeResults.resultsOf(observed.uid),
      ...(this.options.agentStartedAtMs === undefined ? {} : { agentStartedAtMs: this.options.agentStartedAtMs }),
      ...this.resizeStatusOf(observed.uid),
    });
  }

  private resizeStatusOf(uid: string): Pick<Parameters<typeof generatePodStatus>[0], 'currentValuesOf' | 'resizeConditions'> {
    const resizer = this.options.resizer;
    return resizer === undefined ? {} : { currentValuesOf: resizer.currentOf(uid), resizeConditions: resizer.conditionsOf(uid) };
  }
}
