/**
 * The kubelet's critical pod admission (`pkg/kubelet/preemption`): a critical pod (priority at or
 * above system-cluster-critical, a static or mirror pod) that does not fit only for lack of
 * resources is not rejected: the node frees what it lacks by stopping pods it may preempt, and
 * admits it. Pure: this file chooses; the admitter records the choice and the eviction path stops
 * the victims (Failed, `Preempting`, a DisruptionTarget condition).
 *
 * The choice is the kubelet's: only pods the critical pod may preempt (not critical themselves, or
 * of lower priority), BestEffort first, then Burstable, then Guaranteed, each class taken only as
 * far as the classes before it cannot cover; within a class, repeatedly the pod whose requests come
 * closest to what is still missing (each resource's shortfall weighing the same), the smaller pod
 * (memory, then CPU) on a tie.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podQosClass } from '../model/qos.js';
import { isCriticalPod } from './node-pressure.js';
import { podRequests } from './pod-requests.js';
import type { InsufficientResource } from './resources-fit.js';

/** Counts each pod preempted, by the resource the critical pod lacked first (`kubelet_preemptions`). */
export interface PreemptionMetrics {
  preempted(resource: string): void;
}

/** What is still missing of one resource (millicores for cpu, bytes, or pods). */
export interface Requirement {
  readonly resourceName: string;
  readonly quantity: number;
}

/** The victims' status, event and DisruptionTarget message, as the kubelet's. */
export const PREEMPTING_REASON = 'Preempting';
export const PREEMPTED_MESSAGE = 'Preempted in order to admit critical pod';
export const PREEMPTED_CONDITION_MESSAGE = 'Pod was preempted by Kubelet to accommodate a critical pod.';

/** The kubelet's `InsufficientResourceError.GetInsufficientAmount`. */
export function requirementsOf(lacks: readonly InsufficientResource[]): Requirement[] {
  return lacks.map((l) => ({ resourceName: l.resourceName, quantity: l.requested - (l.capacity - l.used) }));
}

/** The kubelet's `GetResourceRequest`: 1 for pods, the effective request otherwise. */
function requestOf(pod: V1Pod, resource: string): number {
  return resource === 'pods' ? 1 : (podRequests(pod).get(resource) ?? 0);
}

/** What would still be missing once `pods` were gone. */
function subtract(requirements: readonly Requirement[], pods: readonly V1Pod[]): Requirement[] {
  return requirements.flatMap((r) => {
    const left = pods.reduce((q, p) => q - requestOf(p, r.resourceName), r.quantity);
    return left > 0 ? [{ resourceName: r.resourceName, quantity: left }] : [];
  });
}

function distance(requirements: readonly Requirement[], pod: V1Pod): number {
  return requirements.reduce((sum, r) => {
    const remaining = r.quantity - requestOf(pod, r.resourceName);
    return remaining > 0 ? sum + (remaining / r.quantity) ** 2 : sum;
  }, 0);
}

function smallerRequest(a: V1Pod, b: V1Pod): boolean {
  for (const resource of ['memory', 'cpu']) {
    const ra = requestOf(a, resource);
    const rb = requestOf(b, resource);
    if (ra !== rb) return ra < rb;
  }
  return true;
}

/** The kubelet's `Preemptable`. */
export function preemptable(preemptor: V1Pod, pod: V1Pod): boolean {
  if (isCriticalPod(preemptor) && !isCriticalPod(pod)) return true;
  const a = preemptor.spec?.priority;
  const b = pod.spec?.priority;
  return a !== undefined && b !== undefined && a > b;
}

/** The kubelet's requirement list text: `[(res: cpu, q: 500), ]`. */
export function requirementsText(requirements: readonly Requirement[]): string {
  return `[${requirements.map((r) => `(res: ${r.resourceName}, q: ${r.quantity}), `).join('')}]`;
}

/** No set of pods frees enough; the message is the kubelet's. */
export class NoPreemptionVictimsError extends Error {
  constructor(readonly missing: readonly Requirement[]) {
    super(`preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: ${requirementsText(missing)}`);
    this.name = 'NoPreemptionVictimsError';
  }
}

function byDistance(candidates: readonly V1Pod[], requirements: readonly Requirement[]): V1Pod[] {
  const pods = [...candidates];
  const chosen: V1Pod[] = [];
  let missing = [...requirements];
  while (missing.length > 0) {
    if (pods.length === 0) throw new NoPreemptionVictimsError(missing);
    let best = 0;
    let bestDistance = missing.length + 1;
    for (const [i, pod] of pods.entries()) {
      const d = distance(missing, pod);
      const current = pods[best];
      if (d < bestDistance || (d === bestDistance && current !== undefined && smallerRequest(pod, current))) {
        bestDistance = d;
        best = i;
      }
    }
    const [pod] = pods.splice(best, 1);
    if (pod === undefined) break;
    chosen.push(pod);
    missing = subtract(missing, [pod]);
  }
  return chosen;
}

/**
 * The pods to stop so that `preemptor` fits, from the admitted `pods`.
 * @throws NoPreemptionVictimsError when the pods it may preempt cannot free enough.
 */
export function podsToPreempt(preemptor: V1Pod, pods: readonly V1Pod[], requirements: readonly Requirement[]): V1Pod[] {
  const candidates = pods.filter((p) => preemptable(preemptor, p));
  const ofClass = (qos: string): V1Pod[] => candidates.filter((p) => podQosClass(p) === qos);
  const [bestEffort, burstable, guaranteed] = [ofClass('BestEffort'), ofClass('Burstable'), ofClass('Guaranteed')];
  const unmet = subtract(requirements, [...bestEffort, ...burstable, ...guaranteed]);
  if (unmet.length > 0) throw new NoPreemptionVictimsError(unmet);
  const guaranteedVictims = byDistance(guaranteed, subtract(requirements, [...bestEffort, ...burstable]));
  const burstableVictims = byDistance(burstable, subtract(requirements, [...bestEffort, ...guaranteedVictims]));
  const bestEffortVictims = byDistance(bestEffort, subtract(requirements, [...burstableVictims, ...guaranteedVictims]));
  return [...bestEffortVictims, ...burstableVictims, ...guaranteedVictims];
}
