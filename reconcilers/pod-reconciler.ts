/**
 * Reconcile(uid): level-triggered and idempotent. The request names a pod by UID and nothing else;
 * the reconciler reads the desired pod (the pod source's store) and the runtime, and decides.
 *
 *   desired pod ──┐
 *                 ├─ computePodActions ─► executor ─► observe again ─► generatePodStatus ─► status writer
 *   runtime ──────┘
 *
 * Three situations, told apart by the desired pod alone:
 * - running: the pod exists and is not being deleted. Plan, execute, report. A pod whose API phase
 *   is terminal is only ever killed: a finished pod never starts again.
 * - terminating: the pod has a deletionTimestamp. Stop everything within the pod's grace period,
 *   report the final status, remove the sandbox and volumes, then delete the pod object (UID
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
import type { Clock } from '../controllers/clock.js';
import { computePodActions } from './compute-pod-actions.js';
import type { ContainerStartFailure } from './container-statuses.js';
import type { PodActionsExecutor } from './execute-pod-actions.js';
import { generatePodStatus } from './generate-pod-status.js';
import { hasRunningParts, type ObservedPod } from './observed-pod.js';
import { observePod } from './observe-pod.js';
import { ANNOTATION_GRACE_PERIOD, intAnnotation, type PodIdentity } from './runtime-labels.js';
import { podGracePeriodSeconds } from './sandbox-config.js';
import type { StatusWriter } from './status-manager.js';
import { isContainerStartError } from './sync-errors.js';
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

export interface PodReconcilerOptions {
  readonly store: PodStore;
  readonly runtime: RuntimeService;
  readonly executor: PodActionsExecutor;
  readonly status: StatusWriter;
  readonly volumes: VolumeManager;
  readonly nodeName: string;
  readonly nodeIp: string;
  /** e.g. `containerd`, from the runtime's version. */
  readonly runtimeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What the queue hears back: run again after a delay, or nothing to do until the next event. */
export interface ReconcileOutcome {
  readonly requeueAfterMs?: number;
}

/** How long to wait before looking again at a pod the store cannot vouch for yet. */
const UNSYNCED_RETRY_MS = 2000;

/** Grace period for a pod the API no longer has: the longest recorded on its containers, else 2 s. */
const ORPHAN_GRACE_SECONDS = 2;

function isTerminalPhase(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

export class PodReconciler {
  /** Start failures of the last reconcile per pod UID and container name (the kubelet's reason cache). */
  private readonly startFailures = new Map<string, Map<string, ContainerStartFailure>>();

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
    const uid = observed.uid;
    const plan = computePodActions({ pod, observed, terminating: isTerminalPhase(pod) });
    log.debug({ plan }, 'computed pod actions');
    let failure: unknown;
    try {
      await this.options.executor.execute(pod, plan, observed);
      this.clearFailures(uid, plan.containersToStart.map((c) => c.name));
    } catch (error) {
      failure = error;
      if (isContainerStartError(error)) this.failuresOf(uid).set(error.containerName, { reason: error.reason, message: error.message });
      // The queue logs the failure it retries; here only the detail for debugging.
      log.debug({ err: error }, 'pod sync failed');
    }
    const after = await observePod(this.options.runtime, uid, this.options.nodeName);
    await this.writeStatus(pod, after, false);
    if (failure instanceof Error) throw failure;
    if (failure !== undefined) throw new Error('pod sync failed', { cause: failure });
    return {};
  }

  private async terminate(pod: V1Pod, observed: ObservedPod, log: Logger): Promise<void> {
    const gracePeriodSeconds = podGracePeriodSeconds(pod);
    log.info({ gracePeriodSeconds }, 'terminating pod');
    await this.options.executor.killPod({ pod, observed, gracePeriodSeconds, reason: 'pod is being deleted' });
    const after = await observePod(this.options.runtime, observed.uid, this.options.nodeName);
    const done = !hasRunningParts(after);
    await this.writeStatus(pod, after, done);
    if (!done) throw new Error(`pod ${observed.uid} still has running parts after being killed`);
    await this.options.executor.removePod(after);
    await this.options.volumes.cleanup(observed.uid);
    await this.options.status.deletePod(pod);
    this.forget(observed.uid);
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

  private async writeStatus(pod: V1Pod, observed: ObservedPod, podIsTerminal: boolean): Promise<void> {
    const now = new Date(Math.floor(this.options.clock.now() / 1000) * 1000);
    const status = generatePodStatus({
      pod,
      observed,
      nodeIp: this.options.nodeIp,
      runtimeName: this.options.runtimeName,
      now,
      startFailures: this.startFailures.get(observed.uid) ?? new Map(),
      podIsTerminal,
    });
    await this.options.status.setPodStatus(pod, status);
  }

  private failuresOf(uid: string): Map<string, ContainerStartFailure> {
    let failures = this.startFailures.get(uid);
    if (failures === undefined) {
      failures = new Map();
      this.startFailures.set(uid, failures);
    }
    return failures;
  }

  private clearFailures(uid: string, names: readonly string[]): void {
    const failures = this.startFailures.get(uid);
    if (failures === undefined) return;
    for (const name of names) failures.delete(name);
    if (failures.size === 0) this.startFailures.delete(uid);
  }

  private forget(uid: string): void {
    this.startFailures.delete(uid);
    this.options.status.forget(uid);
  }
}
