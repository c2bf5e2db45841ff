/**
 * Local storage limits, as the kubelet's eviction manager enforces them every round whatever the
 * node's pressure (`localStorageEviction`): a pod is evicted when
 *
 * 1. an emptyDir volume uses more than its `sizeLimit` (every emptyDir the Summary measures, a
 *    `medium: Memory` one included, as the kubelet's volume stats do; a tmpfs is sized by its
 *    `sizeLimit`, so in practice only a disk-backed one can exceed it);
 * 2. the pod's ephemeral storage (writable layers, logs, local ephemeral volumes: emptyDirs on
 *    disk and configMaps) exceeds the pod's `ephemeral-storage` limit (resourcehelper's
 *    `PodLimits`: the containers' limits aggregated, the overhead added);
 * 3. a container's logs plus (unless the image filesystem is a separate one) its writable layer
 *    exceed its own `ephemeral-storage` limit;
 *
 * checked in that order, the first that applies giving the kubelet's message. Pure: usage in, a
 * verdict out; the manager evicts with grace {@link LOCAL_STORAGE_GRACE_SECONDS} and no
 * `DisruptionTarget` condition (the kubelet adds none on this path).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podLimits } from '../../reconcilers/admission/pod-requests.js';
import { parseQuantity } from '../../reconcilers/model/quantity.js';
import { formatBinaryQuantity } from './ranking.js';

/** The kubelet's `immediateEvictionGracePeriodSeconds`. */
export const LOCAL_STORAGE_GRACE_SECONDS = 1;

/** The kubelet's eviction signals of this path (the `kubelet_evictions` label). */
export type LocalStorageSignal = 'emptydirfs.limit' | 'ephemeralpodfs.limit' | 'ephemeralcontainerfs.limit';

/** One container's local storage, bytes (undefined when not known). */
export interface ContainerStorage {
  readonly name: string;
  readonly rootfsBytes?: number;
  readonly logsBytes?: number;
}

/** What a pod uses of the node's local storage. */
export interface LocalStorageUsage {
  readonly pod: V1Pod;
  /** Each measured emptyDir volume by name, bytes. */
  readonly emptyDirBytes: ReadonlyMap<string, number>;
  readonly containers: readonly ContainerStorage[];
  /** The pod's ephemeral storage: writable layers, logs and local ephemeral volumes, bytes. */
  readonly podBytes: number;
}

/** Why a pod must go. */
export interface LocalStorageViolation {
  readonly signal: LocalStorageSignal;
  readonly message: string;
}

const STORAGE = 'ephemeral-storage';

/** Go's `%q` of a quantity's text. */
function quoted(text: string): string {
  return JSON.stringify(text);
}

/** Whether the pod limits anything this path enforces (the only pods worth measuring). */
export function hasLocalStorageLimits(pod: V1Pod): boolean {
  const sizeLimited = (pod.spec?.volumes ?? []).some((v) => v.emptyDir?.sizeLimit !== undefined);
  return sizeLimited || podLimits(pod).has(STORAGE);
}

function emptyDirViolation(usage: LocalStorageUsage): LocalStorageViolation | undefined {
  for (const volume of usage.pod.spec?.volumes ?? []) {
    const limit = volume.emptyDir?.sizeLimit;
    const used = usage.emptyDirBytes.get(volume.name);
    if (limit === undefined || used === undefined) continue;
    const size = parseQuantity(limit);
    if (size > 0 && used > size) return { signal: 'emptydirfs.limit', message: `Usage of EmptyDir volume ${quoted(volume.name)} exceeds the limit ${quoted(limit)}. ` };
  }
  return undefined;
}

/**
 * The pod limit as the kubelet prints the summed quantity: one contributing quantity as the API
 * wrote it (already canonical), a sum in binary-SI canonical form.
 */
function podLimitText(pod: V1Pod, total: number): string {
  const spec = pod.spec;
  const texts = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].map((c) => c.resources?.limits?.[STORAGE]).filter((t) => t !== undefined);
  const overhead = spec?.overhead?.[STORAGE];
  if (texts.length === 1 && overhead === undefined) return String(texts[0]);
  return formatBinaryQuantity(total);
}

function podViolation(usage: LocalStorageUsage): LocalStorageViolation | undefined {
  const limit = podLimits(usage.pod).get(STORAGE);
  if (limit === undefined || usage.podBytes <= limit) return undefined;
  return { signal: 'ephemeralpodfs.limit', message: `Pod ephemeral local storage usage exceeds the total limit of containers ${podLimitText(usage.pod, limit)}. ` };
}

function containerViolation(usage: LocalStorageUsage, dedicatedImageFs: boolean): LocalStorageViolation | undefined {
  for (const stats of usage.containers) {
    const limit = usage.pod.spec?.containers.find((c) => c.name === stats.name)?.resources?.limits?.[STORAGE];
    if (limit === undefined || parseQuantity(limit) === 0) continue;
    const used = (stats.logsBytes ?? 0) + (dedicatedImageFs ? 0 : (stats.rootfsBytes ?? 0));
    if (used > parseQuantity(limit)) return { signal: 'ephemeralcontainerfs.limit', message: `Container ${stats.name} exceeded its local ephemeral storage limit ${quoted(limit)}. ` };
  }
  return undefined;
}

/** The first local storage limit the pod exceeds, in the kubelet's order; undefined when none. */
export function localStorageViolation(usage: LocalStorageUsage, options: { readonly dedicatedImageFs: boolean }): LocalStorageViolation | undefined {
  return emptyDirViolation(usage) ?? podViolation(usage) ?? containerViolation(usage, options.dedicatedImageFs);
}
