/**
 * Which dead containers and sandboxes to remove: a pure function of the runtime's listing, the GC
 * policy and what the pod store knows (the kubelet's `kuberuntime_gc.go`, evictContainers and
 * evictSandboxes, in nodelet's terms).
 *
 * - Containers are grouped per (pod UID, container name). Only exited containers created at least
 *   `minAgeMs` ago are candidates; of those, the newest `maxPerPodContainer` of each group stay and
 *   the rest go. Running, created and unknown containers are never candidates: the reconciler may
 *   be about to start, stop or inspect them.
 * - Unlike the kubelet, the newest exited instance of a group always stays (`maxPerPodContainer` 0
 *   keeps one): nodelet keeps no state of its own, so the next restart count and the status's
 *   `lastState` are read from that instance.
 * - Then the node-wide limit (`maxContainers`, the kubelet's `MaxContainers`, off when negative):
 *   when more candidates than that are left across the node, each group keeps an equal share,
 *   `floor(maxContainers / groups)` but at least one, its oldest going first, exactly as the
 *   kubelet. The kubelet then removes the oldest left across the node until the limit holds; that
 *   step only has work when the groups outnumber the limit (otherwise the shares already sum to at
 *   most the limit), and then every group is down to its newest instance, which nodelet keeps. So
 *   with more (pod, container) groups than `maxContainers`, nodelet keeps one exited instance per
 *   group where the kubelet would also remove the oldest groups' last ones: the node may hold more
 *   dead containers than the limit, never more than one per group beyond it.
 * - Sandboxes: the newest sandbox of each pod stays; older ones go when they are not ready and no
 *   container (after this plan's removals) still points at them.
 * - Pods gone from every source (the store has synced) are not removed here: the reconciler tears a
 *   gone pod down (stop with its grace period, remove, forget) and is the only one that does; GC
 *   names them so they can be handed to it, as a safety net for a pod nothing else enqueues.
 */
import type { ContainerState, PodSandboxState } from '../../cri/types.js';

/** What the store knows of a pod UID: in it, gone from every (synced) source, or not yet known. */
export type PodPresence = 'present' | 'gone' | 'unknown';

/** One container of the listing, as GC needs it. */
export interface GcContainer {
  readonly id: string;
  readonly podUid: string;
  readonly name: string;
  readonly sandboxId: string;
  readonly state: ContainerState;
  /** Milliseconds since the epoch. */
  readonly createdAtMs: number;
  /** The restart count it was created as: orders instances created within the same millisecond. */
  readonly attempt: number;
}

/** One sandbox of the listing, as GC needs it. */
export interface GcSandbox {
  readonly id: string;
  readonly podUid: string;
  readonly state: PodSandboxState;
  readonly createdAtMs: number;
  readonly attempt: number;
}

/** The kubelet's `GCPolicy`. */
export interface ContainerGcPolicy {
  /** Exited containers younger than this are kept and not counted (kubelet `MinAge`, default 0). */
  readonly minAgeMs: number;
  /** Exited instances kept per (pod, container name) (kubelet `MaxPerPodContainer`, default 1; at least one is always kept). */
  readonly maxPerPodContainer: number;
  /** Exited instances kept across the node (kubelet `MaxContainers`, default -1: no limit; at least one per group is always kept). */
  readonly maxContainers: number;
}

export interface ContainerGcInput {
  readonly containers: readonly GcContainer[];
  readonly sandboxes: readonly GcSandbox[];
  readonly policy: ContainerGcPolicy;
  readonly nowMs: number;
  readonly presence: (podUid: string) => PodPresence;
}

/** The plan, every removal with its reason. */
export interface ContainerGcPlan {
  readonly containers: readonly { readonly container: GcContainer; readonly reason: string }[];
  readonly sandboxes: readonly { readonly sandbox: GcSandbox; readonly reason: string }[];
  /** UIDs of pods gone from every source that still have something in the runtime. */
  readonly gonePods: readonly string[];
}

function newestFirst<T extends { createdAtMs: number; attempt: number }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => b.createdAtMs - a.createdAtMs || b.attempt - a.attempt);
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return groups;
}

interface Removal {
  readonly container: GcContainer;
  readonly reason: string;
}

/** The newest `keep` of each group (groups newest first); the others are added to `removals`, oldest first, with `reason`. */
function trimGroups(groups: readonly GcContainer[][], keep: number, reason: (group: readonly GcContainer[]) => string, removals: Removal[]): GcContainer[][] {
  return groups.map((group) => {
    if (group.length <= keep) return group;
    const why = reason(group);
    // Oldest first, as the kubelet removes them.
    for (const container of group.slice(keep).reverse()) removals.push({ container, reason: why });
    return group.slice(0, keep);
  });
}

function containersToRemove(input: ContainerGcInput, live: (uid: string) => boolean): ContainerGcPlan['containers'] {
  const { maxPerPodContainer, maxContainers, minAgeMs } = input.policy;
  const candidates = input.containers.filter((c) => live(c.podUid) && c.state === 'CONTAINER_EXITED' && input.nowMs - c.createdAtMs >= minAgeMs);
  const removals: Removal[] = [];
  const keep = Math.max(1, maxPerPodContainer);
  const perPod = trimGroups([...groupBy(candidates, (c) => `${c.podUid}/${c.name}`).values()].map(newestFirst), keep, (g) => `more than ${keep} exited instance${keep === 1 ? '' : 's'} of container ${g[0]?.name ?? ''}`, removals);
  const left = perPod.reduce((n, g) => n + g.length, 0);
  if (maxContainers >= 0 && left > maxContainers) {
    // An equal share per group, at least one; the file's TSDoc says why the kubelet's last step has nothing to add.
    const share = Math.max(1, Math.floor(maxContainers / perPod.length));
    const reason = `more than ${maxContainers} exited container${maxContainers === 1 ? '' : 's'} on the node: ${share} kept per pod container`;
    trimGroups(perPod, share, () => reason, removals);
  }
  return removals;
}

function sandboxesToRemove(input: ContainerGcInput, live: (uid: string) => boolean, removedContainers: ReadonlySet<string>): ContainerGcPlan['sandboxes'] {
  const inUse = new Set(input.containers.filter((c) => !removedContainers.has(c.id)).map((c) => c.sandboxId));
  const removals: { sandbox: GcSandbox; reason: string }[] = [];
  for (const group of groupBy(input.sandboxes.filter((s) => live(s.podUid)), (s) => s.podUid).values()) {
    for (const sandbox of newestFirst(group).slice(1)) {
      if (sandbox.state === 'SANDBOX_NOTREADY' && !inUse.has(sandbox.id)) removals.push({ sandbox, reason: 'an older, not ready sandbox without containers' });
    }
  }
  return removals;
}

/** The containers and sandboxes to remove now, and the gone pods to hand to the reconciler. */
export function planContainerGc(input: ContainerGcInput): ContainerGcPlan {
  const live = (uid: string): boolean => input.presence(uid) !== 'gone';
  const containers = containersToRemove(input, live);
  const removed = new Set(containers.map((r) => r.container.id));
  const uids = [...input.containers.map((c) => c.podUid), ...input.sandboxes.map((s) => s.podUid)];
  const gonePods = [...new Set(uids)].filter((uid) => !live(uid)).sort();
  return { containers, sandboxes: sandboxesToRemove(input, live, removed), gonePods };
}
