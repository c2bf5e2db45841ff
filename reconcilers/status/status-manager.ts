/**
 * The status manager: the only writer of `pods/status`, and the one that removes a pod object once
 * the pod has terminated on this node (as the kubelet's status manager does).
 *
 * - Reconciles hand it the full status they generated; it keeps the newest per pod UID (a version
 *   number orders them) and writes it in the background, as the kubelet's status manager does
 *   (`SetPodStatus` only signals its sync loop): a reconcile does not wait for the API server, so
 *   its worker is free for the next pod while the write is in flight. A write that fails (API
 *   server down, timeouts) stays pending and is retried by its own periodic loop, so a reconcile
 *   never fails because the API server is unreachable, and statuses catch up when it returns.
 * - Probers hand it one container's readiness or startup result (`setContainerReadiness`,
 *   `setContainerStartup`, the kubelet's names): it records the result in the pod's
 *   {@link ContainerReadinessStore}, updates the last status it holds when that container ID is
 *   the one reported for its name, recomputes ContainersReady and Ready, and writes at once: a
 *   probe result reaches the API without a queued reconcile. Every full status handed over later
 *   gets the recorded results applied, so one generated before the result cannot undo it.
 * - Writes of one UID are serialised, and a status is written only when its owned part differs
 *   from the last one written and from the one the API server holds (at its one-second precision).
 * - The patch owns only nodelet's fields and conditions (see status-patch.ts) and carries
 *   `metadata.uid`, so it never lands on a newer pod that reuses the name; "gone" is success.
 * - Deletion first flushes the pod's pending status (the final status must be visible), then
 *   deletes with a UID precondition and grace period 0: the containers are already gone.
 * - A static pod (from a manifest file) has no object of its own in the API: its status is written
 *   to its mirror pod (`statusTarget`, the kubelet's `TranslatePodUID`), pending while it has none,
 *   written again to a re-created mirror pod, and it is never deleted through the API.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import { applyProbeResults, currentContainerIds } from './probe-status.js';
import { criContainerId, type ContainerProbeResult, type ContainerReadinessStore } from '../probes/container-readiness.js';
import { canonicalStatus, statusPatch, type PodStatusApi } from './status-patch.js';

export { canonicalStatus, podStatusApi, statusPatch, type PodStatusApi } from './status-patch.js';

/** Writes pod statuses and deletes terminated pods. */
export interface StatusWriter {
  /**
   * Hands over the newest status of `pod`. The write starts at once and goes on in the background
   * (retried while it fails); writes of one pod land in the order handed over.
   */
  setPodStatus(pod: V1Pod, status: V1PodStatus): void;
  /**
   * Writes any pending status of the pod, then deletes the pod object (UID precondition, no grace).
   * Resolves true once the API server deleted the object (or it was gone already), false for a
   * static pod (no object of its own: its mirror pod is the mirror manager's). Throws when either fails.
   */
  deletePod(pod: V1Pod): Promise<boolean>;
  /** Forgets everything about a UID (the pod is finished). */
  forget(uid: string): void;
}

/**
 * The narrow entry point for probers: one container's flag, written without a reconcile. A result
 * for a container ID that is not the current one of its name leaves the status alone. Resolves once
 * written or queued for retry; never rejects.
 */
export interface ContainerStatusSetter {
  setContainerReadiness(key: PodKey, containerId: string, ready: boolean): Promise<void>;
  setContainerStartup(key: PodKey, containerId: string, started: boolean): Promise<void>;
}

/** A retry round left statuses unwritten (the loop backs off and logs it). */
export class StatusRetryError extends Error {
  constructor(readonly unwritten: number) {
    super(`${unwritten} pod status(es) still unwritten`);
    this.name = 'StatusRetryError';
  }
}

export function isStatusRetryError(error: unknown): error is StatusRetryError {
  return error instanceof StatusRetryError;
}

interface Pending {
  readonly key: PodKey;
  readonly status: V1PodStatus;
  readonly canonical: string;
  readonly version: number;
  /** When it was handed over (the kubelet's `status.at`), in milliseconds. */
  readonly at: number;
}

/** The last status handed over (or updated by a probe result) and the pod it was generated for. */
interface Held {
  readonly key: PodKey;
  readonly pod: V1Pod;
  readonly status: V1PodStatus;
  /** `canonicalStatus(status)`: computed once, compared with each write and each echo. */
  readonly canonical: string;
}

export interface StatusManagerOptions {
  readonly api: PodStatusApi;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Probe results per pod; the same store the reconciler's `generatePodStatus` reads. */
  readonly readiness: ContainerReadinessStore;
  /** How often pending writes are retried. Default 5 s. */
  readonly retryPeriodMs?: number;
  /**
   * Where a pod's status lives in the API: the pod itself (the default), or, for a static pod, its
   * mirror pod; undefined while a static pod has no mirror pod (the status stays pending).
   */
  readonly statusTarget?: (key: PodKey) => PodKey | undefined;
  /** True for a static pod: the API holds only its mirror pod, so it is never deleted through the API. */
  readonly isStatic?: (key: PodKey) => boolean;
  /** Hears how long each status took from its hand-over to the API (`kubelet_pod_status_sync_duration_seconds`); absent: not measured. */
  readonly metrics?: { statusSynced(seconds: number): void };
}

/** A static pod's status waits for its mirror pod (retried by the loop). */
export class NoMirrorPodError extends Error {
  override readonly name = 'NoMirrorPodError';
  constructor(readonly key: PodKey) {
    super(`static pod ${key.namespace}/${key.name} has no mirror pod yet`);
  }
}

export function isNoMirrorPodError(error: unknown): error is NoMirrorPodError {
  return error instanceof NoMirrorPodError;
}

export class StatusManager implements StatusWriter, ContainerStatusSetter {
  private readonly written = new Map<string, string>();
  private readonly pending = new Map<string, Pending>();
  private readonly held = new Map<string, Held>();
  /** Serialises writes per UID (a reconcile, a probe result and the retry loop may all write). */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Writes started by `setPodStatus` and not settled yet (awaited by `stop` and `settled`). */
  private readonly background = new Set<Promise<void>>();
  private version = 0;
  private readonly retryLoop: PeriodicLoop;

  constructor(private readonly options: StatusManagerOptions) {
    const periodMs = options.retryPeriodMs ?? 5000;
    this.retryLoop = createPeriodicLoop({
      name: 'pod-status-retry',
      periodMs,
      // Retries keep the period: each round already retries every pending pod.
      backoff: { initialMs: periodMs, maxMs: periodMs },
      clock: options.clock,
      logger: options.logger,
      run: () => this.retryPending(),
    });
  }

  /** Starts the retry loop. */
  start(): void {
    this.retryLoop.start();
  }

  /** Stops the retry loop for good, waiting for a round in flight and for the writes in flight. */
  async stop(): Promise<void> {
    await this.retryLoop.stop();
    await this.settled();
  }

  /** Resolves once every status handed over so far was written, or failed and was left pending. */
  async settled(): Promise<void> {
    await Promise.all([...this.background]);
  }

  /**
   * The last status held for a pod, with probe results applied: what probers read their
   * container's ID and state from (the kubelet's probers read the status manager too).
   */
  podStatus(uid: string): V1PodStatus | undefined {
    return this.held.get(uid)?.status;
  }

  /**
   * Whether `pod`, as the API server sent it, holds the newest status handed over for it (its owned
   * part, at the API server's precision): the echo of this manager's own write. False for a pod it
   * holds no status of.
   */
  holdsNewest(pod: V1Pod): boolean {
    return this.held.get(pod.metadata?.uid ?? '')?.canonical === canonicalStatus(pod.status);
  }

  /** UIDs whose newest status is not written yet. */
  pendingCount(): number {
    return this.pending.size;
  }

  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    const key = podKeyOf(pod);
    const { readiness } = this.options;
    const applied = applyProbeResults(pod, status, readiness.resultsOf(key.uid), this.now());
    readiness.prune(key.uid, currentContainerIds([...(applied.initContainerStatuses ?? []), ...(applied.containerStatuses ?? [])]));
    this.inBackground(this.enqueue(this.hold(key, pod, applied), pod.status));
  }

  /** Keeps a write that nobody awaits where `settled` finds it until it settles (it never rejects). */
  private inBackground(write: Promise<void>): void {
    const tracked: Promise<void> = write.finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  setContainerReadiness(key: PodKey, containerId: string, ready: boolean): Promise<void> {
    return this.setProbeResult(key, containerId, { ready });
  }

  setContainerStartup(key: PodKey, containerId: string, started: boolean): Promise<void> {
    return this.setProbeResult(key, containerId, { started });
  }

  async deletePod(pod: V1Pod): Promise<boolean> {
    const key = podKeyOf(pod);
    await this.flush(key.uid);
    if (this.options.isStatic?.(key) === true) return false;
    await this.options.api.deletePod(key);
    this.options.logger.info({ podUID: key.uid }, 'pod object deleted');
    return true;
  }

  forget(uid: string): void {
    this.written.delete(uid);
    this.pending.delete(uid);
    this.held.delete(uid);
  }

  /** A per-pod manager on the pod lifecycle: a pod that is gone is forgotten. */
  podForgotten(key: PodKey): void {
    this.forget(key.uid);
  }

  /** Writes the pod's pending status, if any; throws when the write fails (it stays pending). */
  async flush(uid: string): Promise<void> {
    const previous = this.inFlight.get(uid) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.writePending(uid));
    this.inFlight.set(uid, next);
    try {
      await next;
    } finally {
      if (this.inFlight.get(uid) === next) this.inFlight.delete(uid);
    }
  }

  /** Transition times at the API server's one-second precision, as the reconciler stamps them. */
  private now(): Date {
    return new Date(Math.floor(this.options.clock.now() / 1000) * 1000);
  }

  private async setProbeResult(key: PodKey, containerId: string, result: ContainerProbeResult): Promise<void> {
    const { readiness, logger } = this.options;
    // Recorded even when the status is not touched: the next full status applies it if it is current.
    readiness.record(key.uid, containerId, result);
    const held = this.held.get(key.uid);
    const id = criContainerId(containerId);
    const reported = [...(held?.status.containerStatuses ?? []), ...(held?.status.initContainerStatuses ?? [])];
    if (held === undefined || !reported.some((s) => s.containerID !== undefined && criContainerId(s.containerID) === id)) {
      logger.debug({ podUID: key.uid, containerId, ...result }, 'probe result for a container the last status does not report; status left alone');
      return;
    }
    const updated = applyProbeResults(held.pod, held.status, readiness.resultsOf(key.uid), this.now());
    if (updated === held.status) return;
    await this.enqueue(this.hold(held.key, held.pod, updated), undefined);
  }

  /** Makes `status` the last status held for the pod. */
  private hold(key: PodKey, pod: V1Pod, status: V1PodStatus): Held {
    const held: Held = { key, pod, status, canonical: canonicalStatus(status) };
    this.held.set(key.uid, held);
    return held;
  }

  /** Makes `status` the pod's pending status and writes it, unless nothing owned would change. Never rejects. */
  private async enqueue(held: Held, apiStatus: V1PodStatus | undefined): Promise<void> {
    const { key, status, canonical } = held;
    // With a write in flight the API will hold that one next: queue behind it whatever it is.
    const idle = !this.inFlight.has(key.uid);
    if (idle && (this.written.get(key.uid) === this.writtenKey(key, canonical) || (apiStatus !== undefined && canonicalStatus(apiStatus) === canonical))) {
      this.pending.delete(key.uid);
      return;
    }
    this.pending.set(key.uid, { key, status, canonical, version: ++this.version, at: this.options.clock.now() });
    await this.flush(key.uid).catch((error: unknown) => {
      this.options.logger.warn({ err: error, podUID: key.uid }, 'pod status not written; retrying in the background');
    });
  }

  /** What `written` holds for a status: its target's UID too, so a re-created mirror pod is written again. */
  private writtenKey(key: PodKey, canonical: string): string {
    const target = this.options.statusTarget === undefined ? key : this.options.statusTarget(key);
    return `${target?.uid ?? ''}/${canonical}`;
  }

  private async writePending(uid: string): Promise<void> {
    const entry = this.pending.get(uid);
    if (entry === undefined) return;
    const target = this.options.statusTarget === undefined ? entry.key : this.options.statusTarget(entry.key);
    if (target === undefined) throw new NoMirrorPodError(entry.key);
    const written = `${target.uid}/${entry.canonical}`;
    if (this.written.get(uid) !== written) {
      await this.options.api.patchStatus(target, statusPatch(target.uid, entry.status));
      this.written.set(uid, written);
      this.options.logger.debug({ podUID: uid, phase: entry.status.phase }, 'pod status written');
    }
    // As the kubelet's syncPod: measured once the API holds it, whether or not this write changed it.
    this.options.metrics?.statusSynced(Math.max(0, this.options.clock.now() - entry.at) / 1000);
    // A newer status may have arrived while this one was written: keep that one pending.
    if (this.pending.get(uid)?.version === entry.version) this.pending.delete(uid);
  }

  private async retryPending(): Promise<void> {
    let unwritten = 0;
    for (const uid of [...this.pending.keys()]) {
      await this.flush(uid).catch(() => {
        unwritten += 1;
      });
    }
    if (unwritten > 0) throw new StatusRetryError(unwritten);
  }
}
