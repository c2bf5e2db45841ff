/**
 * The host IDs this node may give its pods' user namespaces, and how they are cut into one range
 * per pod, as the kubelet's `getKubeletMappings` and `MakeUserNsManager` decide them:
 *
 *   - each pod gets `idsPerPod` IDs (65536 by default: a whole 16-bit ID space), mapped from 0;
 *   - the node's IDs are the subordinate range of the agent's user when one is configured
 *     (`getsubids <user>` and `getsubids -g <user>`, which must agree), else every ID from
 *     `idsPerPod` up (never 0..idsPerPod-1: root and the host's users stay unmapped);
 *   - the range must start on a multiple of `idsPerPod`, at or above it, and hold `maxPods` pods.
 *
 * Pure but for {@link subordinateIdsOf}, whose commands are injected.
 */

/** The IDs of one pod's user namespace: `length` host IDs from `hostId`, seen inside as 0… */
export interface PodIdRange {
  readonly hostId: number;
  readonly length: number;
}

/** The host IDs pods may use, cut into `slots` ranges of `idsPerPod` IDs from slot `firstSlot`. */
export interface NodeIdRange {
  readonly idsPerPod: number;
  /** Index of the first slot: the range's first ID / idsPerPod. */
  readonly firstSlot: number;
  readonly slots: number;
}

/** The kubelet's default IDs per pod and the unit every range is a multiple of. */
export const IDS_PER_POD = 65536;

/** IDs are 32-bit: the last range ends at 2^32. */
const ID_SPACE = 2 ** 32;

/** The node's range cannot give pods user namespaces (the kubelet refuses to start on these). */
export class UserNamespaceRangeError extends Error {
  override readonly name = 'UserNamespaceRangeError';
}

/** The kubelet's default: every ID from `idsPerPod` to 2^32. */
export function defaultHostIds(idsPerPod: number): { firstId: number; length: number } {
  return { firstId: idsPerPod, length: ID_SPACE - idsPerPod };
}

/**
 * Cuts the host IDs into pod slots, with the kubelet's checks.
 * @throws UserNamespaceRangeError when the IDs are not aligned, include 0, or are too few for maxPods
 */
export function nodeIdRange(hostIds: { firstId: number; length: number }, options: { idsPerPod: number; maxPods: number }): NodeIdRange {
  const { idsPerPod, maxPods } = options;
  const { firstId, length } = hostIds;
  if (idsPerPod <= 0 || idsPerPod % IDS_PER_POD !== 0) throw new UserNamespaceRangeError(`kubelet user namespace length ${idsPerPod} is not a multiple of ${IDS_PER_POD}`);
  if (firstId % idsPerPod !== 0) throw new UserNamespaceRangeError(`kubelet user assigned ID ${firstId} is not a multiple of ${idsPerPod}`);
  // Mapping 0 would make a pod's root the host's root.
  if (firstId < idsPerPod) throw new UserNamespaceRangeError(`kubelet user assigned ID ${firstId} must be greater or equal to ${idsPerPod}`);
  if (length % idsPerPod !== 0) throw new UserNamespaceRangeError(`kubelet user assigned IDs length ${length} is not a multiple of ${idsPerPod}`);
  if (length / idsPerPod < maxPods) throw new UserNamespaceRangeError(`kubelet user assigned IDs are not enough to support ${maxPods} pods`);
  return { idsPerPod, firstSlot: firstId / idsPerPod, slots: length / idsPerPod };
}

/** The pod range of a slot index (0-based within the node's range). */
export function rangeOfSlot(range: NodeIdRange, slot: number): PodIdRange {
  return { hostId: (range.firstSlot + slot) * range.idsPerPod, length: range.idsPerPod };
}

/** The slot index of a pod range, or undefined when it is not one of the node's slots. */
export function slotOfRange(range: NodeIdRange, pod: PodIdRange): number | undefined {
  if (pod.length !== range.idsPerPod || pod.hostId % range.idsPerPod !== 0) return undefined;
  const slot = pod.hostId / range.idsPerPod - range.firstSlot;
  return slot >= 0 && slot < range.slots ? slot : undefined;
}

/**
 * Parses one `getsubids` answer (`0: kubelet 65536 2147483648`): exactly one line, four fields.
 * @throws UserNamespaceRangeError
 */
export function parseGetSubIds(output: string): { firstId: number; length: number } {
  const lines = output.replace(/^\n+|\n+$/g, '').split('\n');
  if (lines.length !== 1) throw new UserNamespaceRangeError(`error parsing line ${JSON.stringify(output)}: it must contain only one line`);
  const parts = (lines[0] ?? '').trim().split(/\s+/);
  const firstId = uint32(parts[2]);
  const length = uint32(parts[3]);
  if (parts.length !== 4 || firstId === undefined || length === undefined) throw new UserNamespaceRangeError(`invalid line ${JSON.stringify(output)}`);
  return { firstId, length };
}

/** A decimal 32-bit unsigned integer, else undefined. */
function uint32(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n < ID_SPACE ? n : undefined;
}

/** How the node's subordinate IDs are looked up (injected: the real ones read /etc/passwd and run getsubids). */
export interface SubordinateIdSource {
  /** Whether the user exists on the host. */
  userExists(user: string): Promise<boolean>;
  /** `getsubids [-g] <user>`'s output; undefined when getsubids is not installed. */
  getSubIds(user: string, groups: boolean): Promise<string | undefined>;
}

/**
 * The host IDs for pods: the user's subordinate IDs when the user exists and getsubids is installed
 * (UIDs and GIDs must be the same range), else the kubelet's default.
 * @throws UserNamespaceRangeError when the user's ranges cannot be used
 */
export async function subordinateIdsOf(user: string, source: SubordinateIdSource, idsPerPod: number): Promise<{ firstId: number; length: number }> {
  if (!(await source.userExists(user))) return defaultHostIds(idsPerPod);
  const uids = await source.getSubIds(user, false);
  if (uids === undefined) return defaultHostIds(idsPerPod);
  const gids = await source.getSubIds(user, true);
  if (gids !== uids) throw new UserNamespaceRangeError(`mismatched subuids and subgids for user ${JSON.stringify(user)}`);
  return parseGetSubIds(uids);
}
