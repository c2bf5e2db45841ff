/**
 * When a newer event makes a pod's sync in flight moot, so it is cancelled (the queue's
 * `preempt`) instead of finishing first. The kubelet's pod worker does the same in `UpdatePod`:
 * once a pod is to terminate, the context of its sync in progress is cancelled, so a sync held up
 * by a long step — a liveness kill waiting out the container's grace period (which may be
 * 2^31-1 s), an image pull, a postStart hook — cannot hold back the pod's deletion. The next run
 * then takes the terminating path with the deletion's grace period.
 *
 * Only a sync is preempted: a pod already terminating shortens a stop in flight through the grace
 * period the killer re-reads (`kill-pod.ts`), and preempting it would only restart the stop.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecycleRecord } from './pod-lifecycle.js';

/** What the decision reads about one pod. */
export interface SyncPreemptionFacts {
  /** The kernel's record of the pod; undefined before its first admission. */
  readonly record: PodLifecycleRecord | undefined;
  /** The newest desired object from the pod sources; undefined when none has it. */
  readonly desired: V1Pod | undefined;
  /** Whether the pod's absence from the sources can be trusted (`PodStore.synced(uid)`). */
  readonly absenceTrusted: boolean;
  /** Whether the node decided to evict the pod (`PodEvictions.of`). */
  readonly evicted: boolean;
}

/** Why a sync in flight must stop now, or undefined when it may finish. */
export function syncPreemptionReason(facts: SyncPreemptionFacts): string | undefined {
  if (facts.record !== undefined && facts.record.phase !== 'syncing') return undefined;
  if (facts.desired === undefined) return facts.absenceTrusted ? 'the pod is gone from every pod source' : undefined;
  if (facts.desired.metadata?.deletionTimestamp !== undefined) return 'the pod is being deleted';
  if (facts.evicted) return 'the node evicts the pod';
  return undefined;
}
