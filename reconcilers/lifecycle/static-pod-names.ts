/**
 * Which static pod holds each full name (`namespace/name`) on this node, the kubelet's
 * `startedStaticPodsByFullname` and `waitingToStartStaticPodsByFullname` (pod workers).
 *
 * A static pod is never updated in place: an edited manifest is a new pod (a new UID) under the
 * same full name, and both share one mirror pod. So, as the kubelet:
 *
 * - one static pod at a time runs under a full name. The first to start **holds** it from then
 *   until nothing of it runs any more (it terminated, or it was torn down and forgotten); another
 *   static pod of that name **waits** meanwhile, and those waiting start in the order they first
 *   asked, a waiting pod that is gone or stopping being skipped. An edited manifest's pod starts
 *   only once its predecessor has run out its grace period, never beside it.
 * - the mirror pod of a name still held is kept, even when no source has a static pod of that
 *   name any more (the manifest was removed): the pod is still stopping within its grace period,
 *   and its mirror pod goes once it has terminated (the kubelet's `deleteOrphanedMirrorPods`,
 *   spared by `IsPodForMirrorPodTerminatingByFullName`). The mirror manager reads {@link
 *   StaticPodNamesView.holderOf}.
 *
 * The decision is pure ({@link decideStaticPodStart}); {@link StaticPodNames} keeps the state and
 * hears the lifecycle (a per-pod manager): `podTerminated` and `podForgotten` release the name.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from './observer.js';

/** What the start decision reads about one full name. */
export interface StaticNameFacts {
  /** The UID that holds the name (started, not terminated yet), if any. */
  readonly holder: string | undefined;
  /** The UIDs waiting for the name, in the order they first asked. */
  readonly waiting: readonly string[];
  /** Whether a waiting UID may still start: its source still has it and it is not stopping. */
  readonly startable: (uid: string) => boolean;
}

/** May the static pod start now, and who waits for the name afterwards. */
export type StaticStartDecision =
  /** It holds the name (now, or already): it may run. `waiting`: who waits after it. */
  | { readonly kind: 'start'; readonly waiting: readonly string[] }
  /** Another pod holds the name, or is ahead in line (`behind`): not yet. `waiting`: the line, this pod in it. */
  | { readonly kind: 'wait'; readonly behind: string; readonly waiting: readonly string[] };

/** Whether static pod `uid` may start under a full name with `facts`; pure. */
export function decideStaticPodStart(facts: StaticNameFacts, uid: string): StaticStartDecision {
  const others = facts.waiting.filter((w) => w !== uid);
  if (facts.holder === uid) return { kind: 'start', waiting: others };
  const line = facts.waiting.includes(uid) ? facts.waiting : [...facts.waiting, uid];
  // A waiting pod that is gone or stopping never starts: it keeps no one waiting.
  const live = line.filter((w) => w === uid || facts.startable(w));
  if (facts.holder !== undefined) return { kind: 'wait', behind: facts.holder, waiting: live };
  const first = live[0] ?? uid;
  if (first !== uid) return { kind: 'wait', behind: first, waiting: live };
  return { kind: 'start', waiting: live.filter((w) => w !== uid) };
}

/** The full name of a pod: what one static pod at a time holds. */
export function fullNameOf(key: Pick<PodKey, 'namespace' | 'name'>): string {
  return `${key.namespace}/${key.name}`;
}

/** True for a pod from a manifest file or URL (`kubernetes.io/config.source` other than `api`). */
export function isStaticPodObject(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.['kubernetes.io/config.source'];
  return source !== undefined && source !== 'api';
}

/** What the mirror manager reads. */
export interface StaticPodNamesView {
  /** The UID of the static pod holding this full name (running, or still stopping), if any. */
  holderOf(key: Pick<PodKey, 'namespace' | 'name'>): string | undefined;
}

/** Options of {@link StaticPodNames}. */
export interface StaticPodNamesOptions {
  /**
   * Told when a static pod let go of its name (it terminated or was forgotten): its mirror pod,
   * or the mirror pod of the one waiting for the name, may change now. Must not throw.
   */
  readonly onReleased?: (key: PodKey) => void;
}

/** The holders and waiting lines of static pods' full names; see this file's header. */
export class StaticPodNames implements StaticPodNamesView, PodLifecycleObserver {
  private readonly holders = new Map<string, string>();
  private readonly heldBy = new Map<string, string>();
  private readonly waiting = new Map<string, readonly string[]>();

  constructor(private readonly options: StaticPodNamesOptions = {}) {}

  /**
   * Asks for the full name of static pod `key`: it holds it (now or already) and may start, or
   * waits in line. `startable` says whether another waiting UID may still start.
   */
  tryStart(key: PodKey, startable: (uid: string) => boolean): StaticStartDecision {
    const name = fullNameOf(key);
    const decision = decideStaticPodStart({ holder: this.holders.get(name), waiting: this.waiting.get(name) ?? [], startable }, key.uid);
    if (decision.waiting.length > 0) this.waiting.set(name, decision.waiting);
    else this.waiting.delete(name);
    if (decision.kind === 'start') {
      this.holders.set(name, key.uid);
      this.heldBy.set(key.uid, name);
    }
    return decision;
  }

  holderOf(key: Pick<PodKey, 'namespace' | 'name'>): string | undefined {
    return this.holders.get(fullNameOf(key));
  }

  /** Nothing of the pod runs any more: its name is free for the next in line. */
  podTerminated(key: PodKey): void {
    this.release(key);
  }

  /** The pod is gone: it holds nothing and waits for nothing. */
  podForgotten(key: PodKey): void {
    const name = fullNameOf(key);
    const line = (this.waiting.get(name) ?? []).filter((uid) => uid !== key.uid);
    if (line.length > 0) this.waiting.set(name, line);
    else this.waiting.delete(name);
    this.release(key);
  }

  /** Names held plus lines kept (diagnostics, tests): zero once every static pod is forgotten. */
  size(): number {
    return this.holders.size + this.waiting.size;
  }

  private release(key: PodKey): void {
    const name = this.heldBy.get(key.uid);
    if (name === undefined) return;
    this.heldBy.delete(key.uid);
    if (this.holders.get(name) === key.uid) this.holders.delete(name);
    this.options.onReleased?.(key);
  }
}
