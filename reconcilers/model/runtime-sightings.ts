/**
 * What each pod's last reconcile saw of the runtime, so that PLEG does not hand the reconciler a
 * change it has already reported.
 *
 * Every sandbox or container a reconcile creates, starts, stops or removes shows up in PLEG's next
 * relist as a change of that pod. Most of those changes are the reconcile's own work, already
 * observed by it after it acted and already in the status it wrote: a second reconcile would list
 * the pod again, find nothing to do and write nothing. The kubelet pays less for the same echo
 * because its pod workers read PLEG's cache instead of the runtime; nodelet reads the runtime per
 * reconcile, so it skips the echo instead.
 *
 * Safe because the comparison is exact and the report is a last word: a runtime state is described
 * by its {@link runtimeFingerprint} (every sandbox and container ID with its state), a reconcile
 * reports a state only when a run starting from it would change nothing in the runtime (a run
 * plans from what it saw before it acted, so the state its actions reached may call for the next
 * sidecar or init container: that state is not reported), and PLEG's change is dropped only when
 * the state it listed is the very state the pod's newest reconcile reported. Anything else (a
 * container that exited, a state listed mid-reconcile, a pod no reconcile of this process looked
 * at, the first relist after a restart) is handed on as before. A desired-state change reaches
 * the queue through the pod sources, never through PLEG, so it is never affected.
 *
 * Entries are kept until PLEG matches them or, oldest first, beyond {@link DEFAULT_CAPACITY}
 * pods: a pod's entry outlives the pod by design (its removal is an echo too), and a stale one can
 * only match the exact state it describes.
 */
import type { ObservedPod } from './observed-pod.js';

/** Kinds of runtime object a fingerprint lists. */
export type RuntimePartKind = 'sandbox' | 'container';

/** One object of a pod in the runtime, as a fingerprint entry. */
export function runtimePartEntry(kind: RuntimePartKind, id: string, state: string): string {
  return `${kind}/${id}=${state}`;
}

/** A pod's runtime state from its entries (any order); the empty string when nothing exists. */
export function runtimeFingerprint(entries: readonly string[]): string {
  return [...entries].sort().join(',');
}

/** The fingerprint of an observation, in the same form PLEG builds from its listing. */
export function observedFingerprint(observed: ObservedPod): string {
  return runtimeFingerprint([
    ...observed.sandboxes.map((s) => runtimePartEntry('sandbox', s.id, s.state)),
    ...observed.containers.map((c) => runtimePartEntry('container', c.id, c.state)),
  ]);
}

/** Where the reconciler notes what it reported (the reconciler's side). */
export interface RuntimeSightingsWriter {
  /** The runtime state of pod `uid` that the reconcile just reported (its status was written from it, or it removed everything). */
  reported(uid: string, fingerprint: string): void;
}

/** Where PLEG asks (PLEG's side). */
export interface RuntimeSightingsReader {
  /**
   * True when the newest report of pod `uid` was exactly `fingerprint` (consumed: a second
   * identical listing of a state nobody reported since is handed on).
   */
  alreadyReported(uid: string, fingerprint: string): boolean;
}

/** Pods remembered at most; the oldest report goes first beyond it. */
export const DEFAULT_CAPACITY = 1024;

export class RuntimeSightings implements RuntimeSightingsWriter, RuntimeSightingsReader {
  private readonly byUid = new Map<string, string>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {
    if (!(capacity > 0)) throw new RangeError('capacity must be positive');
  }

  reported(uid: string, fingerprint: string): void {
    // Re-inserting moves the pod to the newest end, so eviction drops the pods reported longest ago.
    this.byUid.delete(uid);
    this.byUid.set(uid, fingerprint);
    if (this.byUid.size > this.capacity) {
      const oldest = this.byUid.keys().next();
      if (oldest.done !== true) this.byUid.delete(oldest.value);
    }
  }

  alreadyReported(uid: string, fingerprint: string): boolean {
    if (this.byUid.get(uid) !== fingerprint) return false;
    this.byUid.delete(uid);
    return true;
  }

  /** How many pods have a report waiting (diagnostics and tests). */
  size(): number {
    return this.byUid.size;
  }
}
