/**
 * `--user-namespaces-host-ids`: the host IDs this node gives its `hostUsers: false` pods.
 *
 *   - unset: as the kubelet, the subordinate IDs of the user `kubelet` (`getsubids kubelet`), else
 *     the kubelet's default, every ID from 65536 up (nodelet replaces the node's kubelet here);
 *   - `FIRST:LENGTH`: exactly these (multiples of 65536, FIRST at least 65536);
 *   - `none`: user namespaces are off; such pods are refused with this reason.
 *
 * Beside a kubelet (the chart), nodelet's range must not overlap the kubelet's, or pods of the two
 * agents could share host IDs: the chart gives a range or `none`.
 */
import { FlagError } from '../util/flags.js';

export type UserNamespaceHostIds =
  | { readonly kind: 'lookup' }
  | { readonly kind: 'off' }
  | { readonly kind: 'range'; readonly firstId: number; readonly length: number };

/** The user whose subordinate IDs are the node's pod IDs: the kubelet's (upstream's e2e tests read it too). */
export const SUBORDINATE_ID_USER = 'kubelet';

/** Parses the flag. @throws FlagError */
export function parseUserNamespaceHostIds(raw: string | undefined): UserNamespaceHostIds {
  const value = (raw ?? '').trim();
  if (value === '') return { kind: 'lookup' };
  if (value === 'none') return { kind: 'off' };
  const match = /^(\d+):(\d+)$/.exec(value);
  const [firstId, length] = [Number(match?.[1]), Number(match?.[2])];
  if (match === null || firstId >= 2 ** 32 || length > 2 ** 32 - firstId) throw new FlagError(`--user-namespaces-host-ids: ${JSON.stringify(value)} is not FIRST:LENGTH within 32-bit IDs, or none`);
  return { kind: 'range', firstId, length };
}
