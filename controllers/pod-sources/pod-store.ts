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
 *   nothing, and nothing may be torn down for it.
 * - Sources report changes themselves (each maps an event to a pod key and enqueues it); the
 *   store adds `resyncAll`, which names every pod of every source once.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStore } from '../../reconcilers/pod-reconciler.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';

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
  /** Called for each pod by `resyncAll`; must not throw. */
  readonly notify: (key: PodKey, reason: 'resync') => void;
}

/** Merges `sources` into one store. */
export function createDesiredPodStore(options: DesiredPodStoreOptions): DesiredPodStore {
  const { sources } = options;
  const holder = (uid: string): DesiredPodSource | undefined => sources.find((s) => s.get(uid) !== undefined);
  const list = (): V1Pod[] => {
    const seen = new Set<string>();
    return sources.flatMap((s) =>
      s.list().filter((pod) => {
        const uid = pod.metadata?.uid ?? '';
        if (seen.has(uid)) return false;
        seen.add(uid);
        return true;
      }),
    );
  };
  return {
    get: (uid) => holder(uid)?.get(uid),
    async confirmGone(key: PodKey): Promise<boolean> {
      if (holder(key.uid) !== undefined) return false;
      const answers = await Promise.all(sources.map((s) => (s.confirmAbsent === undefined ? Promise.resolve(true) : s.confirmAbsent(key))));
      return answers.every(Boolean);
    },
    sourceOf: (uid) => holder(uid)?.name,
    list,
    synced: () => sources.every((s) => s.synced()),
    healthy: () => sources.every((s) => s.healthy()),
    resyncAll(): void {
      for (const pod of list()) options.notify(podKeyOf(pod), 'resync');
    },
    async start(): Promise<void> {
      await Promise.all(sources.map((s) => s.start()));
    },
    stop(): void {
      for (const s of sources) s.stop();
    },
  };
}
