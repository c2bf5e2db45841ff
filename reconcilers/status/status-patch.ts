/**
 * The strategic merge patch that writes the pod status fields nodelet owns and nothing else, and
 * the API calls that send it (as the kubelet's `PatchPodStatus`).
 *
 * What the API server does with each field under a strategic merge patch (core/v1 PodStatus tags,
 * checked against the v1.36 API server by test/integration/status-manager.test.ts):
 * - `conditions` merge by `type`: the patch carries only owned conditions, so a condition another
 *   writer set (PodScheduled, DisruptionTarget, a readiness gate) is never dropped or overwritten
 *   with a stale copy (the one exception: the DisruptionTarget nodelet sets on a pod it evicts,
 *   reason TerminationByKubelet). Elements merge field by field, so every field an owned condition no longer
 *   has (a `reason` once Ready turns True) is cleared with `null`; an owned type nodelet no longer
 *   reports is removed with a `$patch: delete` entry.
 * - `podIPs` and `hostIPs` merge by `ip`: a `$patch: replace` element makes the list exactly ours,
 *   so an old sandbox's IP does not linger.
 * - `containerStatuses`, `initContainerStatuses` and `ephemeralContainerStatuses` have no patch strategy: replaced as a whole,
 *   so a container nodelet no longer reports disappears.
 * - scalar fields nodelet owns but no longer sets (`podIP`, `reason`, …) are cleared with `null`.
 * - `metadata.uid` makes the patch a precondition: it never lands on a newer pod with the name.
 */
import type { V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { PatchType } from '../../kube/client.js';
import type { CoreV1Client } from '../../kube/core-v1.js';
import { isConflict, isInvalidField, isNotFound } from '../../util/api-errors.js';
import type { PodKey } from '../../util/pod-key.js';
import { isWrittenCondition, OWNED_CONDITION_TYPES } from './pod-conditions.js';

/** The two calls the status manager makes; both treat "the pod is gone" as success. */
export interface PodStatusApi {
  /** Sends a strategic merge patch to `pods/status`. */
  patchStatus(key: PodKey, body: Record<string, unknown>): Promise<void>;
  /** Deletes the pod object with a UID precondition and no grace. */
  deletePod(key: PodKey): Promise<void>;
}

/** Owned fields written as they are (or cleared with null). */
const SCALAR_FIELDS = ['phase', 'reason', 'message', 'hostIP', 'podIP', 'startTime', 'qosClass', 'observedGeneration'] as const;
/** Owned lists merged by `ip` on the server: sent with a replace directive. */
const IP_LISTS = ['hostIPs', 'podIPs'] as const;
/** Owned lists the server replaces whole. */
const ATOMIC_LISTS = ['containerStatuses', 'initContainerStatuses', 'ephemeralContainerStatuses'] as const;
/** Every field of a PodCondition, so the ones an owned condition lacks are cleared on the server. */
const CONDITION_FIELDS = ['status', 'reason', 'message', 'lastTransitionTime', 'lastProbeTime', 'observedGeneration'] as const;

/** Fields compared as they are to decide whether a status changed (conditions are filtered first). */
const COMPARED_FIELDS = [...SCALAR_FIELDS, ...IP_LISTS, ...ATOMIC_LISTS] as const;

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * `value` in the form the API server sends it back: dates at its one-second precision, nulls,
 * empty maps and empty lists left out (it omits empty optional fields and sends the ones it has no
 * value for as null, such as a condition's `lastProbeTime`), keys sorted. Undefined when nothing is
 * left.
 */
function normalized(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Date) return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (typeof value === 'string' && TIMESTAMP.test(value)) return value.replace(/\.\d+Z$/, 'Z');
  if (Array.isArray(value)) {
    const items = value.map(normalized).filter((item) => item !== undefined);
    return items.length === 0 ? undefined : items;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .map(([key, item]) => [key, normalized(item)] as const)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return entries.length === 0 ? undefined : Object.fromEntries(entries);
  }
  return value;
}

/**
 * JSON of the owned part of a status (owned conditions only, sorted by type) in the form the API
 * server holds it (see `normalized`): equal strings mean nothing nodelet owns differs, whether both
 * came from nodelet or one came back from the API server.
 */
export function canonicalStatus(status: V1PodStatus | undefined): string {
  const picked: Record<string, unknown> = {};
  for (const field of COMPARED_FIELDS) picked[field] = status?.[field];
  picked.conditions = (status?.conditions ?? []).filter(isWrittenCondition).sort((a, b) => (a.type < b.type ? -1 : 1));
  return JSON.stringify(normalized(picked) ?? {});
}

/** One owned condition with every field it lacks set to null. */
function conditionEntry(c: V1PodCondition): Record<string, unknown> {
  const entry: Record<string, unknown> = { type: c.type };
  for (const field of CONDITION_FIELDS) entry[field] = c[field] ?? null;
  return entry;
}

/** Owned conditions as set, and a delete directive for each owned type not set. */
function conditionsPatch(conditions: readonly V1PodCondition[]): Record<string, unknown>[] {
  const owned = conditions.filter(isWrittenCondition);
  const deleted = OWNED_CONDITION_TYPES.filter((type) => !owned.some((c) => c.type === type));
  return [...owned.map(conditionEntry), ...deleted.map((type) => ({ type, $patch: 'delete' }))];
}

/** The strategic merge patch that makes every owned field of the API status equal `status`. */
export function statusPatch(uid: string, status: V1PodStatus): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of SCALAR_FIELDS) body[field] = status[field] ?? null;
  for (const field of IP_LISTS) {
    const ips = status[field];
    body[field] = ips === undefined || ips.length === 0 ? null : [...ips, { $patch: 'replace' }];
  }
  for (const field of ATOMIC_LISTS) body[field] = status[field] ?? null;
  body.conditions = conditionsPatch(status.conditions ?? []);
  return { metadata: { uid }, status: body };
}

/**
 * Whether a failed status patch or deletion means "this pod is gone": 404; 409; or 422 on
 * `metadata.uid`, which is how the v1.36 API server refuses a patch whose UID is not the pod's (a
 * new pod took the name: the integration test checks it).
 */
export function isPodGone(error: unknown): boolean {
  return isNotFound(error) || isConflict(error) || isInvalidField(error, 'metadata.uid');
}

/** The status API of client-node, with "gone" as success. */
export function podStatusApi(core: Pick<CoreV1Client, 'patchNamespacedPodStatus' | 'deleteNamespacedPod'>): PodStatusApi {
  const ignoreGone = (error: unknown): void => {
    if (!isPodGone(error)) throw error;
  };
  return {
    patchStatus: (key, body) =>
      core
        .patchNamespacedPodStatus({ name: key.name, namespace: key.namespace, body }, PatchType.strategicMerge)
        .then(() => undefined, ignoreGone),
    deletePod: (key) =>
      core
        .deleteNamespacedPod({ name: key.name, namespace: key.namespace, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid: key.uid } } })
        .then(() => undefined, ignoreGone),
  };
}
