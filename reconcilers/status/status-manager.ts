/**
 * The status manager: the only writer of `pods/status`, and the one that removes a pod object once
 * the pod has terminated on this node (as the kubelet's status manager does).
 *
 * - Reconciles hand it the status they generated; it keeps the newest per pod UID (a version
 *   number orders them) and writes it. A write that fails (API server down, timeouts) stays
 *   pending and is retried by its own loop every few seconds, so a reconcile never fails because
 *   the API server is unreachable, and statuses catch up when it returns.
 * - A status is written only when it differs from both the last one written for that UID and the
 *   one the API server holds (compared at the API's one-second time precision).
 * - Patches carry `metadata.uid`, so a patch never lands on a newer pod that reuses the name.
 * - Fields nodelet owns but no longer sets (`podIP`, `reason`, …) are cleared explicitly.
 * - Deletion first flushes the pod's pending status (the final status must be visible), then
 *   deletes with a UID precondition and grace period 0: the containers are already gone.
 */
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../../util/api-errors.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';

/** Writes pod statuses and deletes terminated pods. */
export interface StatusWriter {
  /** Hands over the newest status of `pod`; written now if possible, else retried in the background. */
  setPodStatus(pod: V1Pod, status: V1PodStatus): Promise<void>;
  /** Writes any pending status of the pod, then deletes the pod object (UID precondition, no grace). Throws when either fails. */
  deletePod(pod: V1Pod): Promise<void>;
  /** Forgets everything about a UID (the pod is finished). */
  forget(uid: string): void;
}

/** The two calls the status manager makes; `undefined` results mean "the pod is gone". */
export interface PodStatusApi {
  patchStatus(target: PodTarget, body: Record<string, unknown>): Promise<void>;
  deletePod(target: PodTarget): Promise<void>;
}

export interface PodTarget {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** Status fields nodelet owns; those it does not set are cleared with `null` in a merge patch. */
const OWNED_FIELDS = ['phase', 'conditions', 'reason', 'message', 'hostIP', 'hostIPs', 'podIP', 'podIPs', 'startTime', 'qosClass', 'containerStatuses', 'initContainerStatuses', 'observedGeneration'] as const;

/** JSON with dates at the API server's one-second precision and keys sorted. */
export function canonicalStatus(status: V1PodStatus | undefined): string {
  const picked: Record<string, unknown> = {};
  for (const field of OWNED_FIELDS) {
    const value = status?.[field as keyof V1PodStatus];
    if (value !== undefined) picked[field] = value;
  }
  return JSON.stringify(picked, (_key, value: unknown) => {
    if (value instanceof Date) return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
    if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)) return value.replace(/\.\d+Z$/, 'Z');
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)));
    }
    return value;
  });
}

/** The merge patch that makes the API status equal `status` on every owned field. */
export function statusPatch(uid: string, status: V1PodStatus): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of OWNED_FIELDS) body[field] = status[field as keyof V1PodStatus] ?? null;
  return { metadata: { uid }, status: body };
}

/** The status API of client-node, with "gone" (404, or a new pod under the name: 409) as success. */
export function podStatusApi(core: CoreV1Api): PodStatusApi {
  const ignoreGone = (error: unknown): void => {
    if (!isNotFound(error) && !isConflict(error)) throw error;
  };
  return {
    patchStatus: (t, body) =>
      core
        .patchNamespacedPodStatus({ name: t.name, namespace: t.namespace, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch))
        .then(() => undefined, ignoreGone),
    deletePod: (t) =>
      core
        .deleteNamespacedPod({ name: t.name, namespace: t.namespace, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid: t.uid } } })
        .then(() => undefined, ignoreGone),
  };
}

interface Pending {
  readonly target: PodTarget;
  readonly status: V1PodStatus;
  readonly canonical: string;
  readonly version: number;
}

export interface StatusManagerOptions {
  readonly api: PodStatusApi;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How often pending writes are retried. Default 5 s. */
  readonly retryPeriodMs?: number;
}

export class StatusManager implements StatusWriter {
  private readonly written = new Map<string, string>();
  private readonly pending = new Map<string, Pending>();
  /** Serialises writes per UID (a reconcile and the retry loop may both write). */
  private readonly inFlight = new Map<string, Promise<void>>();
  private version = 0;
  private timer: TimerHandle | undefined;

  constructor(private readonly options: StatusManagerOptions) {}

  /** Starts the retry loop. */
  start(): void {
    const tick = (): void => {
      void this.retryPending().finally(() => {
        if (this.timer !== undefined) this.timer = this.options.clock.setTimeout(tick, this.options.retryPeriodMs ?? 5000);
      });
    };
    this.timer = this.options.clock.setTimeout(tick, this.options.retryPeriodMs ?? 5000);
  }

  stop(): void {
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** UIDs whose newest status is not written yet. */
  pendingCount(): number {
    return this.pending.size;
  }

  async setPodStatus(pod: V1Pod, status: V1PodStatus): Promise<void> {
    const target = { namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
    const canonical = canonicalStatus(status);
    if (this.written.get(target.uid) === canonical || canonicalStatus(pod.status) === canonical) {
      this.pending.delete(target.uid);
      return;
    }
    this.pending.set(target.uid, { target, status, canonical, version: ++this.version });
    await this.flush(target.uid).catch((error: unknown) => {
      this.options.logger.warn({ err: error, podUID: target.uid }, 'pod status not written; retrying in the background');
    });
  }

  async deletePod(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    await this.flush(uid);
    await this.options.api.deletePod({ namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '', uid });
    this.options.logger.info({ podUID: uid }, 'pod object deleted');
  }

  forget(uid: string): void {
    this.written.delete(uid);
    this.pending.delete(uid);
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

  private async writePending(uid: string): Promise<void> {
    const entry = this.pending.get(uid);
    if (entry === undefined) return;
    await this.options.api.patchStatus(entry.target, statusPatch(uid, entry.status));
    this.written.set(uid, entry.canonical);
    // A newer status may have arrived while this one was written: keep that one pending.
    if (this.pending.get(uid)?.version === entry.version) this.pending.delete(uid);
    this.options.logger.debug({ podUID: uid, phase: entry.status.phase }, 'pod status written');
  }

  private async retryPending(): Promise<void> {
    for (const uid of [...this.pending.keys()]) {
      await this.flush(uid).catch((error: unknown) => {
        this.options.logger.debug({ err: error, podUID: uid }, 'pod status retry failed');
      });
    }
  }
}
