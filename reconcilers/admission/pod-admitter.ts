/**
 * Admission's per-pod state, as the kubelet's `HandlePodAdditions`: pods are admitted in creation
 * order, each against the pods already admitted and not yet terminated; a rejected pod never
 * starts. The reconciler asks before a pod it has not admitted yet runs.
 *
 * - Creation order: when asked about a pod, the admitter first decides every pod of the store
 *   created before it that it has not decided yet (oldest first), as the kubelet admits a batch
 *   of new pods sorted by creation time. Whichever pod's reconcile happens to run first, the older
 *   pod wins the node's room or host port, and a pod's decision never changes afterwards.
 * - The admitted set: pods admitted here whose lifecycle has not reached terminated (the kubelet's
 *   active pods, terminating ones included: they still hold their resources and ports).
 * - A rejection is recorded as a Warning event once, and kept until the pod is forgotten so every
 *   later reconcile reports the same terminal Failed status, whatever the handlers would answer now.
 * - Without the Node object (the agent has not registered yet) nothing is decided: the pod waits.
 *
 * Registered on the pod lifecycle (a per-pod manager), so a forgotten pod leaves nothing here.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../events/event-recorder.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';
import { admitPod, type PodAdmitHandler, type Preemption, type Rejection } from './admit.js';

/** The status message of a rejected pod, as the kubelet's `rejectPod` words it. */
export function rejectedStatusMessage(message: string): string {
  return `Pod was rejected: ${message}`;
}

/** What the admitter answers for one pod. */
export type AdmitDecision =
  | { readonly kind: 'admitted' }
  | { readonly kind: 'rejected'; readonly rejection: Rejection }
  /** Nothing can be decided yet (no Node object): ask again later. */
  | { readonly kind: 'deferred'; readonly why: string };

/** What the admitter reads. */
export interface PodAdmitterOptions {
  readonly handlers: readonly PodAdmitHandler[];
  readonly events: EventRecorder;
  /** The Node object this agent registered; undefined before registration. */
  readonly node: () => V1Node | undefined;
  /** Every desired pod of this node (the pod store): older undecided pods are admitted first. */
  readonly pods: () => readonly V1Pod[];
  /** A pod with its resources as the node allocated them (in-place resize); the pod itself when absent. */
  readonly allocated?: (pod: V1Pod) => V1Pod;
  /** Stops the pods a critical pod preempts (Failed, `Preempting`); `preemptor` is the critical pod. */
  readonly preempt: (preemption: Preemption, preemptor: V1Pod) => void;
}

const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? '';

function createdAt(pod: V1Pod): number {
  const at = pod.metadata?.creationTimestamp;
  return at === undefined ? 0 : new Date(at).getTime();
}

/** Creation time, then namespace/name, then UID: a total order, so every agent decides alike. */
function byCreation(a: V1Pod, b: V1Pod): number {
  const name = (p: V1Pod): string => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}/${uidOf(p)}`;
  return createdAt(a) - createdAt(b) || name(a).localeCompare(name(b));
}

/** A pod that would go through admission on its own reconcile: not finished, not being deleted. */
function wantsToRun(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata?.deletionTimestamp === undefined && phase !== 'Succeeded' && phase !== 'Failed';
}

const ADMITTED: AdmitDecision = { kind: 'admitted' };

export class PodAdmitter implements PodLifecycleObserver {
  private readonly rejected = new Map<string, Rejection>();
  /** Admitted pods, as admitted; `active` until their lifecycle reaches terminated. */
  private readonly admitted = new Map<string, { readonly pod: V1Pod; active: boolean }>();

  constructor(private readonly options: PodAdmitterOptions) {}

  /** The rejection already decided for a pod, if any. */
  rejectionOf(uid: string): Rejection | undefined {
    return this.rejected.get(uid);
  }

  /** Decides a pod that is about to run for the first time since the agent started (see the header). */
  admit(pod: V1Pod): AdmitDecision {
    const known = this.decided(uidOf(pod));
    if (known !== undefined) return known;
    const node = this.options.node();
    if (node === undefined) return { kind: 'deferred', why: 'the node is not registered yet' };
    const older = this.options.pods().filter((p) => this.decided(uidOf(p)) === undefined && wantsToRun(p) && uidOf(p) !== uidOf(pod) && byCreation(p, pod) < 0);
    for (const p of older.sort(byCreation)) this.decide(p, node);
    return this.decide(pod, node);
  }

  podTerminated(key: PodKey): void {
    const entry = this.admitted.get(key.uid);
    if (entry !== undefined) entry.active = false;
  }

  podForgotten(key: PodKey): void {
    this.rejected.delete(key.uid);
    this.admitted.delete(key.uid);
  }

  /** The admitted pods that still hold the node's resources (not terminated), as they were admitted. */
  activePods(): V1Pod[] {
    return [...this.admitted.values()].filter((e) => e.active).map((e) => e.pod);
  }

  /** Pods with an admission decision held (admitted or rejected). */
  size(): number {
    return this.rejected.size + this.admitted.size;
  }

  private decided(uid: string): AdmitDecision | undefined {
    const rejection = this.rejected.get(uid);
    if (rejection !== undefined) return { kind: 'rejected', rejection };
    return this.admitted.has(uid) ? ADMITTED : undefined;
  }

  private decide(pod: V1Pod, node: V1Node): AdmitDecision {
    // Resized pods count with what they were allocated since, not with what they were admitted with.
    const otherPods = this.activePods().map((p) => this.options.allocated?.(p) ?? p);
    const result = admitPod(this.options.handlers, { pod, node, otherPods });
    if (result.admit) {
      if (result.preempt !== undefined) {
        // The victims hold nothing of the node for later decisions, as the kubelet's kill is done by then.
        for (const victim of result.preempt.victims) {
          const entry = this.admitted.get(uidOf(victim));
          if (entry !== undefined) entry.active = false;
        }
        this.options.preempt(result.preempt, pod);
      }
      this.admitted.set(uidOf(pod), { pod, active: true });
      return ADMITTED;
    }
    this.rejected.set(uidOf(pod), result);
    this.options.events.record(pod, { type: 'Warning', reason: result.reason, message: result.message });
    return { kind: 'rejected', rejection: result };
  }
}
