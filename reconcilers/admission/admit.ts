/**
 * Pod admission, as the kubelet's `canAdmitPod`: before a pod runs on this node for the first
 * time, every admit handler looks at it; the first that refuses decides the reason and message
 * the pod is rejected with (phase Failed, a Warning event, nothing started).
 *
 * Handlers are pure functions of what they are given (the pod, the node object, the pods already
 * admitted): adding one means adding it to the list `admitHandlers` builds.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';

/**
 * The verdict of one handler or of the whole list. An admission may come with pods to preempt
 * first (a critical pod's room: `preemption.ts`); it stands only if no later handler refuses.
 */
export type AdmitResult =
  | { readonly admit: true; readonly preempt?: Preemption }
  | { readonly admit: false; readonly reason: string; readonly message: string };

/** Pods to stop so that the admitted pod fits, and the resource it lacked first (`kubelet_preemptions`' label). */
export interface Preemption {
  readonly victims: readonly V1Pod[];
  readonly resource: string;
}

/** A rejection: the kubelet's reason (e.g. `SysctlForbidden`) and its message. */
export type Rejection = Extract<AdmitResult, { admit: false }>;

/** What a handler decides on. */
export interface PodAdmitAttributes {
  readonly pod: V1Pod;
  /** The Node object this agent registered, as the node controller last read it back. */
  readonly node: V1Node;
  /** The pods already admitted on this node and not yet terminated (the kubelet's active pods). */
  readonly otherPods: readonly V1Pod[];
}

/** One admission rule. `admit` is pure and quick: it never calls out. */
export interface PodAdmitHandler {
  /** For logs: which rule refused. */
  readonly name: string;
  admit(attributes: PodAdmitAttributes): AdmitResult;
}

export const ADMITTED: AdmitResult = { admit: true };

/** Runs the handlers in order; the first rejection wins; otherwise the admission carries the first handler's preemption (only the general predicates preempt). */
export function admitPod(handlers: readonly PodAdmitHandler[], attributes: PodAdmitAttributes): AdmitResult {
  let preempt: Preemption | undefined;
  for (const handler of handlers) {
    const result = handler.admit(attributes);
    if (!result.admit) return result;
    preempt ??= result.preempt;
  }
  return preempt === undefined ? ADMITTED : { admit: true, preempt };
}
