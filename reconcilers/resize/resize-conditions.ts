/**
 * The pod's resize conditions as the kubelet's status manager keeps them (status_manager.go, v1.36):
 *
 * - PodResizePending (reason Deferred or Infeasible, the admit handler's message): set when an
 *   allocation is refused, cleared when the resize is allocated or reverted.
 * - PodResizeInProgress: set when a resize is allocated (without reason) and while a running
 *   container does not run with its allocated values yet; reason Error and the runtime's message
 *   when actuating failed. Cleared once every running container runs as allocated.
 * - Each carries the pod generation it answers (`observedGeneration`): a pending condition takes the
 *   newest generation; an in-progress condition keeps the generation it was set with until cleared.
 *   `lastTransitionTime` moves only when the reason changes; `lastProbeTime` at every change.
 * - On first sight of a pod (an agent restart) the conditions are taken from its API status (the
 *   kubelet's BackfillPodResizeConditions), so a restart neither forgets nor re-announces them.
 */
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import type { Clock } from '../../util/clock.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';

export const POD_RESIZE_PENDING = 'PodResizePending';
export const POD_RESIZE_IN_PROGRESS = 'PodResizeInProgress';

interface Conditions {
  pending?: V1PodCondition;
  inProgress?: V1PodCondition;
}

function sameCondition(a: V1PodCondition | undefined, b: V1PodCondition | undefined): boolean {
  return (a?.reason ?? '') === (b?.reason ?? '') && (a?.message ?? '') === (b?.message ?? '') && a?.observedGeneration === b?.observedGeneration;
}

export class ResizeConditions implements PodLifecycleObserver {
  private readonly pods = new Map<string, Conditions>();

  constructor(private readonly clock: Clock) {}

  /** Pods with PodResizeInProgress set (`kubelet_pod_in_progress_resizes`). */
  inProgressCount(): number {
    let count = 0;
    for (const conditions of this.pods.values()) if (conditions.inProgress !== undefined) count++;
    return count;
  }

  /** Loads the pod's conditions from its API status the first time the pod is seen. */
  backfill(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.pods.has(uid)) return;
    const of = (type: string): V1PodCondition | undefined => pod.status?.conditions?.find((c) => c.type === type && c.status === 'True');
    const pending = of(POD_RESIZE_PENDING);
    const inProgress = of(POD_RESIZE_IN_PROGRESS);
    this.pods.set(uid, { ...(pending === undefined ? {} : { pending }), ...(inProgress === undefined ? {} : { inProgress }) });
  }

  /** Sets PodResizePending; true when its reason or generation changed (an event is due). */
  setPending(uid: string, reason: 'Deferred' | 'Infeasible', message: string, generation: number): boolean {
    const entry = this.entry(uid);
    const before = entry.pending;
    entry.pending = this.condition(POD_RESIZE_PENDING, before, { reason, message, generation });
    return before?.reason !== reason || before.observedGeneration !== generation;
  }

  clearPending(uid: string): void {
    delete this.entry(uid).pending;
  }

  /**
   * Sets PodResizeInProgress, keeping the generation it already has (clear it first to take a
   * newer one) and its reason and message when none is given. Returns the generation it carries
   * and whether anything changed.
   */
  setInProgress(uid: string, generation: number, error?: { readonly reason: string; readonly message: string }): { generation: number; changed: boolean } {
    const entry = this.entry(uid);
    const before = entry.inProgress;
    const kept = before?.observedGeneration ?? generation;
    const reason = error?.reason ?? before?.reason ?? '';
    const message = error?.message ?? before?.message ?? '';
    entry.inProgress = this.condition(POD_RESIZE_IN_PROGRESS, before, { reason, message, generation: kept });
    return { generation: kept, changed: !sameCondition(before, entry.inProgress) };
  }

  /** Clears PodResizeInProgress; the generation it carried when it was set, undefined when it was not. */
  clearInProgress(uid: string): number | undefined {
    const entry = this.entry(uid);
    const before = entry.inProgress;
    delete entry.inProgress;
    return before === undefined ? undefined : (before.observedGeneration ?? 0);
  }

  pendingReason(uid: string): string | undefined {
    return this.pods.get(uid)?.pending?.reason;
  }

  /** The pod's resize conditions, for its status. */
  conditionsOf(uid: string): V1PodCondition[] {
    const entry = this.pods.get(uid);
    return [entry?.pending, entry?.inProgress].filter((c): c is V1PodCondition => c !== undefined);
  }

  /** UIDs whose resize is Deferred (to try again when room frees up). */
  deferred(): string[] {
    return [...this.pods].filter(([, c]) => c.pending?.reason === 'Deferred').map(([uid]) => uid);
  }

  podForgotten(key: PodKey): void {
    this.pods.delete(key.uid);
  }

  size(): number {
    return this.pods.size;
  }

  private entry(uid: string): Conditions {
    let entry = this.pods.get(uid);
    if (entry === undefined) {
      entry = {};
      this.pods.set(uid, entry);
    }
    return entry;
  }

  private condition(type: string, before: V1PodCondition | undefined, c: { reason: string; message: string; generation: number }): V1PodCondition {
    if (before !== undefined && sameCondition(before, { type, status: 'True', reason: c.reason, message: c.message, observedGeneration: c.generation })) return before;
    const now = new Date(Math.floor(this.clock.now() / 1000) * 1000);
    const kept = (before?.reason ?? '') === c.reason ? before?.lastTransitionTime : undefined;
    const lastTransitionTime = kept ?? now;
    return {
      type,
      status: 'True',
      lastProbeTime: now,
      lastTransitionTime,
      observedGeneration: c.generation,
      ...(c.reason === '' ? {} : { reason: c.reason }),
      ...(c.message === '' ? {} : { message: c.message }),
    };
  }
}
