/**
 * Reconcile(uid): level-triggered and idempotent. The request names a pod by UID and nothing else;
 * the reconciler reads the desired pod (the pod source's store) and the runtime, and decides.
 *
 *   desired pod ──┐
 *                 ├─ computePodActions ─► executor ─► observe again ─► generatePodStatus ─► status writer
 *   runtime ──────┘
 *
 * The lifecycle of a UID, told apart by the desired pod alone (monotonic, as in the kubelet's pod
 * workers):
 *
 *   syncing ──(deletionTimestamp | activeDeadlineSeconds | terminal phase)──► terminating ──► terminated ──► finished
 *
 * - syncing: the pod exists and is not being deleted. Plan, execute, report. Containers that wait
 *   out a backoff (CrashLoopBackOff, ImagePullBackOff) are reported and the pod requeued for when
 *   the backoff ends. A pod past its `activeDeadlineSeconds` is killed and Failed with
 *   `DeadlineExceeded`. A pod whose API phase is terminal is only ever killed: a finished pod
 *   never starts again.
 * - terminating: the pod has a deletionTimestamp. Stop everything within the grace period — which
 *   can only shrink: a later, shorter grace period cuts a running stop short — report the final
 *   (terminal) status, remove the sandbox and volumes, then delete the pod object (UID
 *   precondition), so when `kubectl delete` returns nothing of the pod is left in the runtime.
 * - gone: the API has no pod with this UID (deleted while the agent was down, or force-deleted).
 *   Stop and remove whatever the runtime still has of it, with the grace period recorded on its
 *   containers. Only once the pod source has synced: before that, absence proves nothing, and a
 *   restarted agent must not tear down the pods it is about to find again.
 *
 * A failed step is thrown after the status is written, so the queue retries with backoff.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimeService } from '../cri/types.js';
import type { Clock } from '../util/clock.js';
import { computePodActions, type PodActions } from './compute-pod-actions.js';
import type { ContainerStartFailure } from './status/container-statuses.js';
import type { EventRecorder } from './events/event-recorder.js';
import type { ExecuteResult, PodActionsExecutor } from './execute-pod-actions.js';
import { generatePodStatus } from './status/generate-pod-status.js';
import type { ImagePuller } from './images/image-puller.js';
import { hasRunningParts, type ObservedPod } from './observed-pod.js';
import { observePod } from './observe-pod.js';
import type { RestartBackoff } from './restart-backoff.js';
import { ANNOTATION_GRACE_PERIOD, intAnnotation, type PodIdentity } from './runtime-labels.js';
import { podGracePeriodSeconds } from './sandbox-config.js';
import type { StatusWriter } from './status/status-manager.js';
import type { ContainerResultsReader } from './status/container-readiness.js';
import type { ContainerStartError } from './sync-errors.js';
import type { VolumeManager } from './volumes/index.js';

/** Where the reconciler reads desired pods. */
export interface PodStore {
  get(uid: string): V1Pod | undefined;
  /**
   * True once the store holds a full list from the API. Before that, a UID missing from it proves
   * nothing (the agent just started, or the API server is down), so nothing is torn down.
   */
  synced(): boolean;
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
  readonly restartBackoff: RestartBackoff;
  readonly puller: ImagePuller;
  readonly nodeName: string;
  readonly nodeIp: string;
  /** e.g. `containerd`, from the runtime's version. */
  readonly runtimeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Holds new pods while paused; absent means never paused. */
  readonly admission?: PodAdmission;
  /** Probe results the status reports (the status manager's store); absent means none. */
  readonly probeResults?: ContainerResultsReader;
}

/** What the queue hears back: run again after a delay, or nothing to do until the next event. */
export interface ReconcileOutcome {
  readonly requeueAfterMs?: number;
}

/** How long to wait before looking again at a pod the store cannot vouch for yet. */
const UNSYNCED_RETRY_MS = 2000;

/** Grace period for a pod the API no longer has: the longest recorded on its containers, else 2 s. */
const ORPHAN_GRACE_SECONDS = 2;

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

/** Requeue for the earliest backoff end or deadline; throw the first failure that is not a backoff. */
function outcomeOf(failures: readonly ContainerStartError[], deadlineMs: number | undefined): ReconcileOutcome {
  const hard = failures.find((f) => f.retryAfterMs === undefined);
  if (hard !== undefined) throw hard;
  const waits = [...failures.map((f) => f.retryAfterMs ?? 0), ...(deadlineMs !== undefined && deadlineMs > 0 ? [deadlineMs] : [])];
  return waits.length === 0 ? {} : { requeueAfterMs: Math.max(1, Math.min(...waits)) };
}

export class PodReconciler {
  /** Start failures of the last reconcile per pod UID and container name (the kubelet's reason cache). */
  private readonly startFailures = new Map<string, Map<string, ContainerStartFailure>>();
  /** The shortest grace period seen for each terminating pod: a grace period only shrinks. */
  private readonly terminationGrace = new Map<string, number>();

  constructor(private readonly options: PodReconcilerOptions) {}

  /** Reconciles one pod. Throws when a step failed (after reporting status), so the caller retries. */
  async reconcile(ref: PodIdentity): Promise<ReconcileOutcome> {
    const log = this.options.logger.child({ podUID: ref.uid, pod: `${ref.namespace}/${ref.name}` });
    const pod = this.options.store.get(ref.uid);
    const observed = await observePod(this.options.runtime, ref.uid, this.options.nodeName);
    if (pod === undefined) {
      if (!this.options.store.synced()) {
        log.debug('pod source not synced yet: not deciding whether the pod is gone');
        return { requeueAfterMs: UNSYNCED_RETRY_MS };
      }
      await this.cleanUpGone(observed, log);
      return {};
    }
    if (pod.metadata?.deletionTimestamp !== undefined) {
      await this.terminate(pod, observed, log);
      return {};
    }
    return this.sync(pod, observed, log);
  }

  private async sync(pod: V1Pod, observed: ObservedPod, log: Logger): Promise<ReconcileOutcome> {
    const deadlineMs = activeDeadlineRemainingMs(pod, this.options.clock.now());
    const deadlineExceeded = deadlineMs !== undefined && deadlineMs <= 0 && !isTerminalPhase(pod);
    if (deadlineExceeded) this.options.events.record(pod, { type: 'Warning', ...DEADLINE_EXCEEDED });
    const plan = computePodActions({ pod, observed, terminating: isTerminalPhase(pod) || deadlineExceeded });
    log.debug({ plan }, 'computed pod actions');
    if (plan.createSandbox && observed.sandboxes.length === 0 && this.options.admission?.isPaused() === true) {
      await this.hold(pod, observed, log);
      return {};
    }
    this.reportSandboxChange(pod, plan, observed);
    let result: ExecuteResult = { failures: [] };
    let setupError: unknown;
    try {
      result = await this.options.executor.execute(pod, plan, observed, podGracePeriodSeconds(pod));
    } catch (error) {
      setupError = error;
      log.debug({ err: error }, 'pod sync failed');
    }
    this.recordFailures(observed.uid, plan, result.failures);
    const after = await observePod(this.options.runtime, observed.uid, this.options.nodeName);
    await this.writeStatus(pod, after, { podIsTerminal: false, ...(deadlineExceeded ? { terminalReason: DEADLINE_EXCEEDED } : {}) });
    if (setupError instanceof Error) throw setupError;
    if (setupError !== undefined) throw new Error('pod sync failed', { cause: setupError });
    return outcomeOf(result.failures, deadlineExceeded ? undefined : deadlineMs);
  }

  /**
   * Leaves a new pod Pending (containers waiting in ContainerCreating) while the agent is paused.
   * No requeue: unpausing resyncs every pod, and the periodic resync is the safety net.
   */
  private async hold(pod: V1Pod, observed: ObservedPod, log: Logger): Promise<void> {
    log.info('nodelet is paused: not starting the pod');
    this.options.events.record(pod, {
      type: 'Normal',
      reason: 'NodeletPaused',
      message: 'nodelet on this node is paused (NodeAgent spec.paused): the pod starts once it is unpaused',
    });
    await this.writeStatus(pod, observed, { podIsTerminal: false });
  }

  private reportSandboxChange(pod: V1Pod, plan: PodActions, observed: ObservedPod): void {
    if (plan.killPod && plan.createSandbox && observed.sandboxes.length > 0) {
      this.options.events.record(pod, { type: 'Normal', reason: 'SandboxChanged', message: 'Pod sandbox changed, it will be killed and re-created.' });
    }
  }

  private async terminate(pod: V1Pod, observed: ObservedPod, log: Logger): Promise<void> {
    const uid = observed.uid;
    const gracePeriodSeconds = this.shrinkGrace(pod);
    log.info({ gracePeriodSeconds }, 'terminating pod');
    await this.options.executor.killPod({
      pod,
      observed,
      gracePeriodSeconds,
      currentGracePeriodSeconds: () => this.shrinkGrace(this.options.store.get(uid) ?? pod),
      reason: 'pod is being deleted',
    });
    const after = await observePod(this.options.runtime, uid, this.options.nodeName);
    const done = !hasRunningParts(after);
    await this.writeStatus(pod, after, { podIsTerminal: done });
    if (!done) throw new Error(`pod ${uid} still has running parts after being killed`);
    await this.options.executor.removePod(after);
    await this.options.volumes.cleanup(uid);
    await this.options.status.deletePod(pod);
    this.forget(uid);
  }

  /** The pod's grace period, never longer than one seen before for this termination. */
  private shrinkGrace(pod: V1Pod): number {
    const uid = pod.metadata?.uid ?? '';
    const grace = Math.min(podGracePeriodSeconds(pod), this.terminationGrace.get(uid) ?? Number.POSITIVE_INFINITY);
    this.terminationGrace.set(uid, grace);
    return grace;
  }

  private async cleanUpGone(observed: ObservedPod, log: Logger): Promise<void> {
    if (observed.sandboxes.length > 0 || observed.containers.length > 0) {
      const grace = Math.max(ORPHAN_GRACE_SECONDS, ...observed.containers.map((c) => intAnnotation(c.annotations, ANNOTATION_GRACE_PERIOD, 0)));
      log.info({ gracePeriodSeconds: grace }, 'removing pod that no longer exists in the API');
      await this.options.executor.killPod({ pod: undefined, observed, gracePeriodSeconds: grace, reason: 'pod no longer exists' });
      await this.options.executor.removePod(await observePod(this.options.runtime, observed.uid, this.options.nodeName));
    }
    await this.options.volumes.cleanup(observed.uid);
    this.forget(observed.uid);
  }

  private async writeStatus(pod: V1Pod, observed: ObservedPod, how: { podIsTerminal: boolean; terminalReason?: { reason: string; message: string } }): Promise<void> {
    const now = new Date(Math.floor(this.options.clock.now() / 1000) * 1000);
    const status = generatePodStatus({
      pod,
      observed,
      nodeIp: this.options.nodeIp,
      runtimeName: this.options.runtimeName,
      now,
      startFailures: this.startFailures.get(observed.uid) ?? new Map(),
      podIsTerminal: how.podIsTerminal,
      ...(how.terminalReason === undefined ? {} : { terminalReason: how.terminalReason }),
      ...(this.options.probeResults === undefined ? {} : { probeResults: this.options.probeResults.resultsOf(observed.uid) }),
    });
    await this.options.status.setPodStatus(pod, status);
  }

  /** Remembers why each container the plan tried to start could not, and forgets the ones that started. */
  private recordFailures(uid: string, plan: PodActions, failures: readonly ContainerStartError[]): void {
    const failed = new Map(failures.map((f) => [f.containerName, { reason: f.reason, message: f.message }]));
    const entries = new Map(this.startFailures.get(uid) ?? []);
    for (const target of plan.containersToStart) {
      const failure = failed.get(target.name);
      if (failure === undefined) entries.delete(target.name);
      else entries.set(target.name, failure);
    }
    if (entries.size === 0) this.startFailures.delete(uid);
    else this.startFailures.set(uid, entries);
  }

  private forget(uid: string): void {
    this.startFailures.delete(uid);
    this.terminationGrace.delete(uid);
    this.options.restartBackoff.forgetPrefix(`${uid}/`);
    this.options.puller.forget(uid);
    this.options.status.forget(uid);
  }
}
