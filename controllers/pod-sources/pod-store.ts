/**
 * The desired-pod store: one view over every pod source (the API informer; the manifest
 * directory of static pods with `--pod-manifest-path`). The reconciler reads only this store.
 *
 * - `get(uid)` answers from the first source, in the order given, that has the UID. UIDs do not
 *   collide across sources (static pods' UIDs are derived from their manifests; their mirror pods
 *   in the API have UIDs of their own).
 * - A pod is gone only when no source has it, and each source's origin confirms it (`confirmGone`):
 *   a lagging cache must never make nodelet tear down a pod that runs.
 * - The store is synced only when every source is: before that, absence from one source proves
 *   nothing. Per UID it is subtler (the kubelet's rule: only its orphan cleanup waits for every
 *   source, a pod removed from the source that had it is killed at once): the store remembers the
 *   source last seen having each UID (its owner), and `synced(uid)` is true once that owner is
 *   synced, whatever the others do, so a `--manifest-url` nobody answers never blocks the deletion
 *   of API pods. A UID no source was seen having (a pod found in the runtime after a restart) still
 *   waits for every source.
 * - Sources report changes themselves (each maps an event to a pod key and enqueues it); the
 *   store adds `resyncAll`, which names every pod of every source once.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStore } from '../../reconcilers/pod/reconciler-deps.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** One source of desired pods. */
export interface DesiredPodSource {
  /** `api`, `file`, `http`: for logs and the NodeAgent's report. */
  readonly name: string;
  /** Starts watching; resolves after the first attempt to sync (the source keeps retrying). */
  start(): Promise<void>;
  stop(): void;
  get(uid: string): V1Pod | undefined;
  list(): V1Pod[];
  /** True once the source has delivered a full list. */
  synced(): boolean;
  /** True while the source is delivering changes. */
  healthy(): boolean;
  /**
   * Asks the source's origin directly whether the pod is really gone (its cache may lag): true
   * only when the origin answers that it has no pod with this UID. Absent: the cache is the truth.
   */
  confirmAbsent?(key: PodKey): Promise<boolean>;
  /** The deletion grace period of a pod's final object when the source removed it (`deletion-grace.ts`); absent: never known. */
  finalDeletionGraceSeconds?(uid: string): number | undefined;
}

/**
 * The API source without mirror pods: they are the API's shadow of static pods (the file source's),
 * never run themselves (the mirror manager reads them from the API source directly).
 */
export function withoutMirrorPods(source: DesiredPodSource, isMirrorPod: (pod: V1Pod) => boolean): DesiredPodSource {
  const visible = (pod: V1Pod | undefined): V1Pod | undefined => (pod === undefined || isMirrorPod(pod) ? undefined : pod);
  return {
    name: source.name,
    start: () => source.start(),
    stop: () => {
      source.stop();
    },
    get: (uid) => visible(source.get(uid)),
    list: () => source.list().filter((pod) => !isMirrorPod(pod)),
    synced: () => source.synced(),
    healthy: () => source.healthy(),
    ...(source.confirmAbsent === undefined ? {} : { confirmAbsent: source.confirmAbsent.bind(source) }),
    ...(source.finalDeletionGraceSeconds === undefined ? {} : { finalDeletionGraceSeconds: source.finalDeletionGraceSeconds.bind(source) }),
  };
}

/**
 * Which source last had each UID. An entry outlives its pod by two resync rounds (long enough for
 * the reconciler to tear the pod down), then goes: the memory stays bounded.
 */
function createOwnerMemory(sources: readonly DesiredPodSource[]): {
  record(uid: string, source: DesiredPodSource): void;
  ownerOf(uid: string): DesiredPodSource | undefined;
  prune(present: ReadonlySet<string>): void;
} {
  const owners = new Map<string, DesiredPodSource>();
  let absentOnce = new Set<string>();
  return {
    record: (uid, source) => {
      if (uid !== '') owners.set(uid, source);
    },
    ownerOf: (uid) => {
      const owner = owners.get(uid);
      return owner !== undefined && sources.includes(owner) ? owner : undefined;
    },
    prune(present): void {
      const absent = new Set([...owners.keys()].filter((uid) => !present.has(uid)));
      for (const uid of absent) if (absentOnce.has(uid)) owners.delete(uid);
      absentOnce = new Set([...absent].filter((uid) => owners.has(uid)));
    },
  };
}

/** The merged store; see this file's header. */
export interface DesiredPodStore extends PodStore {
  list(): V1Pod[];
  /** The name of the source that has the UID, if any. */
  sourceOf(uid: string): string | undefined;
  /** True while every source is healthy. */
  healthy(): boolean;
  /** Names every pod of every source once, with reason `resync` (periodic safety net, queue loss). */
  resyncAll(): void;
  /** Starts every source; resolves once each has made its first attempt. */
  start(): Promise<void>;
  stop(): void;
}

export interface DesiredPodStoreOptions {
  /** In order of precedence. */
  readonly sources: readonly DesiredPodSource[];
  /** Where `resyncAll` tells each pod (a `resync` event). */
  readonly podEvents: PodEventSink;
}

/** Merges `sources` into one store. */
export function createDesiredPodStore(options: DesiredPodStoreOptions): DesiredPodStore {
  const { sources } = options;
  const owners = createOwnerMemory(sources);
  const holder = (uid: string): DesiredPodSource | undefined => {
    const found = sources.find((s) => s.get(uid) !== undefined);
    if (found !== undefined) owners.record(uid, found);
    return found;
  };
  const list = (): V1Pod[] => {
    const seen = new Set<string>();
    return sources.flatMap((s) =>
      s.list().filter((pod) => {
        const uid = pod.metadata?.uid ?? '';
        if (seen.has(uid)) return false;
        seen.add(uid);
        owners.record(uid, s);
        return true;
      }),
    );
  };
  const allSynced = (): boolean => sources.every((s) => s.synced());
  return {
    get: (uid) => holder(uid)?.get(uid),
    async confirmGone(key: PodKey): Promise<boolean> {
      if (holder(key.uid) !== undefined) return false;
      const answers = await Promise.all(sources.map((s) => (s.confirmAbsent === undefined ? Promise.resolve(true) : s.confirmAbsent(key))));
      return answers.every(Boolean);
    },
    sourceOf: (uid) => holder(uid)?.name,
    finalDeletionGraceSeconds: (uid) => sources.map((s) => s.finalDeletionGraceSeconds?.(uid)).find((grace) => grace !== undefined),
    list,
    synced: (uid?: string) => {
      if (uid === undefined || holder(uid) !== undefined) return allSynced();
      return owners.ownerOf(uid)?.synced() ?? allSynced();
    },
    healthy: () => sources.every((s) => s.healthy()),
    resyncAll(): void {
      const pods = list();
      owners.prune(new Set(pods.map((pod) => pod.metadata?.uid ?? '')));
      for (const pod of pods) options.podEvents.emit({ kind: 'resync', key: podKeyOf(pod) });
    },
    async start(): Promise<void> {
      await Promise.all(sources.map((s) => s.start()));
    },
    stop(): void {
      for (const s of sources) s.stop();
    },
  };
}
