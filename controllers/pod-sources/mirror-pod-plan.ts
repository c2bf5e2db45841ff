/**
 * What one round of the mirror pod manager does (`mirror-pods.ts`), decided from what it sees: a
 * pure function of the static pods, the mirror pods in the API cache, which static sources have
 * synced, and which static pod holds each full name (`reconcilers/lifecycle/static-pod-names.ts`).
 * The kubelet's `tryReconcileMirrorPods` (run by `SyncPod` of a started static pod) and
 * `deleteOrphanedMirrorPods` (`HandlePodCleanups`) in one:
 *
 * - a static pod that holds its full name, or whose name nobody holds, gets a mirror pod with its
 *   hash: none yet, create one; one with another hash (the file was edited) or being deleted
 *   (`kubectl delete pod`), delete it and create one;
 * - a static pod whose name another static pod holds (the old pod of an edited manifest, still
 *   stopping within its grace period) waits, and so does the mirror pod: it keeps showing the old
 *   pod, with the same UID, until that pod has terminated;
 * - a mirror pod with no static pod (the file was removed) is deleted once the source it came
 *   from has synced, unless a static pod of its name still holds the name: the removed pod is
 *   still stopping, and its mirror pod goes once it has terminated.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podKeyOf } from '../../util/pod-key.js';
import { fullNameOf, type StaticPodNamesView } from '../../reconcilers/lifecycle/static-pod-names.js';
import { ANNOTATION_CONFIG_HASH, ANNOTATION_CONFIG_MIRROR, ANNOTATION_CONFIG_SOURCE } from './static-pod.js';

/** Why a mirror pod is deleted. */
export type MirrorDeleteReason = 'hash differs from the static pod' | 'being deleted' | 'no static pod';

/** One step of a round, carried out in order. */
export type MirrorStep =
  /** Creates the mirror pod of `staticPod` (none exists, or the one before it is deleted by the step before). */
  | { readonly kind: 'create'; readonly staticPod: V1Pod }
  /** Deletes `mirror` (UID precondition). */
  | { readonly kind: 'delete'; readonly mirror: V1Pod; readonly why: MirrorDeleteReason };

/** What a round decides from. */
export interface MirrorRoundFacts {
  /** Every static pod of the static sources. */
  readonly staticPods: readonly V1Pod[];
  /** The mirror pods in the API cache, by full name (`namespace/name`). */
  readonly mirrors: ReadonlyMap<string, V1Pod>;
  /** Whether the static source named (`file`, `http`; undefined: every static source) has delivered its pods once. */
  readonly synced: (source: string | undefined) => boolean;
  /** Which static pod holds each full name (running, or stopping). */
  readonly names: StaticPodNamesView;
}

const hashOf = (pod: V1Pod): string | undefined => pod.metadata?.annotations?.[ANNOTATION_CONFIG_HASH];

/** Whether `mirror` is the mirror pod of `staticPod` as it is now: its hash, not being deleted. */
export function isCurrentMirror(mirror: V1Pod, staticPod: V1Pod): boolean {
  return mirror.metadata?.deletionTimestamp === undefined && mirror.metadata?.annotations?.[ANNOTATION_CONFIG_MIRROR] === hashOf(staticPod);
}

/** The steps of one round; see this file's header. */
export function planMirrorRound(facts: MirrorRoundFacts): MirrorStep[] {
  const steps: MirrorStep[] = [];
  const wanted = new Set<string>();
  for (const staticPod of facts.staticPods) {
    const key = podKeyOf(staticPod);
    const name = fullNameOf(key);
    wanted.add(name);
    const holder = facts.names.holderOf(key);
    if (holder !== undefined && holder !== key.uid) continue;
    const mirror = facts.mirrors.get(name);
    if (mirror !== undefined && isCurrentMirror(mirror, staticPod)) continue;
    if (mirror !== undefined) steps.push({ kind: 'delete', mirror, why: mirror.metadata?.deletionTimestamp === undefined ? 'hash differs from the static pod' : 'being deleted' });
    steps.push({ kind: 'create', staticPod });
  }
  for (const [name, mirror] of facts.mirrors) {
    if (wanted.has(name) || !facts.synced(mirror.metadata?.annotations?.[ANNOTATION_CONFIG_SOURCE])) continue;
    if (facts.names.holderOf(podKeyOf(mirror)) !== undefined) continue;
    steps.push({ kind: 'delete', mirror, why: 'no static pod' });
  }
  return steps;
}
