/**
 * The pod source's store: the latest object of every pod bound to this node, keyed by UID, with a
 * namespace/name → UID map so a pod deleted and re-created under the same name while the watch was
 * down is seen as two pods (the old UID vanished, a new one appeared), not as an update.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodKey } from '../../util/pod-key.js';

/** The ref of a pod object, undefined for an object without a UID (never stored). */
export function podKeyOfStored(pod: V1Pod): PodKey | undefined {
  const uid = pod.metadata?.uid;
  if (uid === undefined || uid === '') return undefined;
  return { uid, namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '' };
}

/** What storing a pod changed. */
export interface UpsertOutcome {
  readonly ref: PodKey;
  /**
   * `unchanged`: same UID at the same resourceVersion was already stored. `status-updated`: a new
   * version whose metadata (but its resourceVersion and managedFields) and spec are the same, so
   * only the status moved: mostly nodelet's own status writes.
   */
  readonly kind: 'added' | 'updated' | 'status-updated' | 'unchanged';
  /** A different UID that held the same namespace/name and is now gone from the index. */
  readonly replaced?: PodKey;
}

/** UID-keyed pod store. */
export interface PodIndex {
  /** Stores the pod as the latest version of its UID; undefined if it has no UID. */
  upsert(pod: V1Pod): UpsertOutcome | undefined;
  /** Forgets the pod's UID; returns its ref if it was stored. */
  remove(pod: V1Pod): PodKey | undefined;
  /** Makes the index hold exactly `pods` (a full list); returns the refs of UIDs that vanished. */
  replaceAll(pods: readonly V1Pod[]): PodKey[];
  get(uid: string): V1Pod | undefined;
  list(): V1Pod[];
  refs(): PodKey[];
}

const nameKey = (ref: PodKey): string => `${ref.namespace}/${ref.name}`;

/** Creates an empty index. */
export function createPodIndex(): PodIndex {
  const byUid = new Map<string, { pod: V1Pod; ref: PodKey }>();
  const uidByName = new Map<string, string>();

  function forget(uid: string): PodKey | undefined {
    const entry = byUid.get(uid);
    if (!entry) return undefined;
    byUid.delete(uid);
    if (uidByName.get(nameKey(entry.ref)) === uid) uidByName.delete(nameKey(entry.ref));
    return entry.ref;
  }

  function upsert(pod: V1Pod): UpsertOutcome | undefined {
    const ref = podKeyOfStored(pod);
    if (!ref) return undefined;
    const holder = uidByName.get(nameKey(ref));
    const replaced = holder !== undefined && holder !== ref.uid ? forget(holder) : undefined;
    const before = byUid.get(ref.uid)?.pod;
    byUid.set(ref.uid, { pod, ref });
    uidByName.set(nameKey(ref), ref.uid);
    const sameVersion =
      before?.metadata?.resourceVersion !== undefined && before.metadata.resourceVersion === pod.metadata?.resourceVersion;
    const kind = before === undefined ? 'added' : sameVersion ? 'unchanged' : onlyStatusChanged(before, pod) ? 'status-updated' : 'updated';
    return replaced ? { ref, kind, replaced } : { ref, kind };
  }

  return {
    upsert,
    remove(pod: V1Pod): PodKey | undefined {
      const ref = podKeyOfStored(pod);
      return ref ? forget(ref.uid) : undefined;
    },
    replaceAll(pods: readonly V1Pod[]): PodKey[] {
      const listed = new Set(pods.map((pod) => podKeyOfStored(pod)?.uid));
      const vanished: PodKey[] = [];
      for (const uid of [...byUid.keys()]) {
        if (listed.has(uid)) continue;
        const ref = forget(uid);
        if (ref) vanished.push(ref);
      }
      for (const pod of pods) {
        const outcome = upsert(pod);
        if (outcome?.replaced) vanished.push(outcome.replaced);
      }
      return vanished;
    },
    get: (uid) => byUid.get(uid)?.pod,
    list: () => [...byUid.values()].map((entry) => entry.pod),
    refs: () => [...byUid.values()].map((entry) => entry.ref),
  };
}

/** Whether two versions of a pod differ in their status only (and the bookkeeping of every write). */
function onlyStatusChanged(before: V1Pod, after: V1Pod): boolean {
  const desired = (pod: V1Pod): string => {
    const { resourceVersion: _version, managedFields: _fields, ...metadata } = pod.metadata ?? {};
    return JSON.stringify({ metadata, spec: pod.spec });
  };
  return desired(before) === desired(after);
}
