/**
 * The status manager: the only writer of `pods/status`, and the one that removes a pod object once
 * the pod has terminated on this node (as the kubelet's status manager does).
 *
 * - A status is written only when it differs from both the last one written for that UID and the
 *   one the API server holds (compared at the API's one-second time precision).
 * - Patches carry `metadata.uid`, so a patch never lands on a newer pod that reuses the name.
 * - Fields nodelet owns but no longer sets (`podIP`, `reason`, …) are cleared explicitly.
 * - Deletion uses a UID precondition and grace period 0: the containers are already gone.
 */
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../controllers/api-errors.js';

/** Writes pod statuses and deletes terminated pods. */
export interface StatusWriter {
  /** Writes `status` for `pod` unless it is already what the API server holds. */
  setPodStatus(pod: V1Pod, status: V1PodStatus): Promise<void>;
  /** Deletes the pod object (UID precondition, no grace). A pod already gone is not an error. */
  deletePod(pod: V1Pod): Promise<void>;
  /** Forgets what was written for a UID (the pod is finished). */
  forget(uid: string): void;
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

export class ApiStatusWriter implements StatusWriter {
  private readonly written = new Map<string, string>();

  constructor(private readonly options: { readonly core: CoreV1Api; readonly logger: Logger }) {}

  async setPodStatus(pod: V1Pod, status: V1PodStatus): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const wanted = canonicalStatus(status);
    if (this.written.get(uid) === wanted || canonicalStatus(pod.status) === wanted) return;
    try {
      await this.options.core.patchNamespacedPodStatus(
        { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? 'default', body: statusPatch(uid, status) },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      this.written.set(uid, wanted);
      this.options.logger.debug({ podUID: uid, phase: status.phase }, 'pod status written');
    } catch (error) {
      // Gone, or replaced by a pod with a new UID: nothing of ours to write.
      if (isNotFound(error) || isConflict(error)) return;
      throw error;
    }
  }

  async deletePod(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    try {
      await this.options.core.deleteNamespacedPod({
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? 'default',
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
      this.options.logger.info({ podUID: uid }, 'pod object deleted');
    } catch (error) {
      if (isNotFound(error) || isConflict(error)) return;
      throw error;
    }
  }

  forget(uid: string): void {
    this.written.delete(uid);
  }
}
