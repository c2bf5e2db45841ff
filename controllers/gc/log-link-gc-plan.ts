/**
 * Which container log links container GC removes: a pure function of the link directory's entries
 * and the runtime's containers (the kubelet's dead-symlink pass at the end of
 * `evictPodLogsDirectories`). The links of removed containers go with them
 * (`reconcilers/model/container-log-links.ts`); this pass catches the rest.
 *
 * - Only dangling links (the target is gone) whose names end in `.log` are candidates; a link
 *   whose target exists stays, whoever made it.
 * - A link whose container the runtime still has in a state other than exited stays: its log file
 *   is missing only for the moment log rotation renames it before the runtime reopens it.
 * - Unlike the kubelet, which removes every dangling link in the directory, nodelet removes only
 *   links that point under its own pod log directory. The directory may be shared with a kubelet
 *   (or a second nodelet) on the same host, whose links point into its own pod log directory and
 *   whose containers nodelet's runtime does not know: those links are theirs to remove.
 */
import path from 'node:path';
import type { ContainerState } from '../../cri/types.js';
import { containerIdOfLinkName, LOG_LINK_SUFFIX } from '../../reconcilers/model/log-link-names.js';
import { isUnder } from '../../reconcilers/model/container-logs.js';

/** One entry of the link directory, as read from the filesystem. */
export interface LogLinkEntry {
  readonly name: string;
  /** What the symbolic link says (as written: absolute, or relative to the directory); undefined when the entry is not a link. */
  readonly target: string | undefined;
  /** Whether the target exists (the link resolves). */
  readonly targetExists: boolean;
}

/** Why a dangling link is removed. */
export type LogLinkRemovalReason =
  /** The runtime has no container with the ID the name carries. */
  | 'container-gone'
  /** Its container has exited: no runtime will write that log again. */
  | 'container-exited'
  /** The name carries no container ID: nothing can ever make its target exist again. */
  | 'no-container-id';

/** Why a dangling link stays. */
export type LogLinkKeepReason =
  /** It points outside nodelet's pod log directory: another agent's link. */
  | 'not-ours'
  /** Its container still runs (or is being created): its log is between a rotation and the reopen. */
  | 'container-live';

export interface LogLinkGcPlan {
  readonly remove: readonly { readonly name: string; readonly reason: LogLinkRemovalReason }[];
  /** Dangling links that stay, with why (links that resolve are not listed). */
  readonly keep: readonly { readonly name: string; readonly reason: LogLinkKeepReason }[];
}

export interface LogLinkGcInput {
  /** The link directory. */
  readonly dir: string;
  readonly entries: readonly LogLinkEntry[];
  /** nodelet's pod log directory (`--pod-log-dir`). */
  readonly podLogDir: string;
  /** Every container the runtime has (nodelet's node or not), with its state. */
  readonly containers: readonly { readonly id: string; readonly state: ContainerState }[];
}

/** The state of the container whose ID (or ID prefix, from a name cut to length) is `id`; undefined when the runtime has none. */
function stateOf(containers: LogLinkGcInput['containers'], id: string): ContainerState | undefined {
  const matches = containers.filter((c) => c.id.startsWith(id));
  if (matches.length === 0) return undefined;
  return matches.find((c) => c.state !== 'CONTAINER_EXITED')?.state ?? 'CONTAINER_EXITED';
}

function verdict(input: LogLinkGcInput, entry: LogLinkEntry & { target: string }): { remove: LogLinkRemovalReason } | { keep: LogLinkKeepReason } {
  if (!isUnder(input.podLogDir, path.resolve(input.dir, entry.target))) return { keep: 'not-ours' };
  const id = containerIdOfLinkName(entry.name);
  if (id === undefined) return { remove: 'no-container-id' };
  const state = stateOf(input.containers, id);
  if (state === undefined) return { remove: 'container-gone' };
  return state === 'CONTAINER_EXITED' ? { remove: 'container-exited' } : { keep: 'container-live' };
}

/** The dangling links of `entries` to remove, and those that stay. */
export function planLogLinkGc(input: LogLinkGcInput): LogLinkGcPlan {
  const remove: { name: string; reason: LogLinkRemovalReason }[] = [];
  const keep: { name: string; reason: LogLinkKeepReason }[] = [];
  for (const entry of input.entries) {
    const { target } = entry;
    if (target === undefined || entry.targetExists || !entry.name.endsWith(LOG_LINK_SUFFIX)) continue;
    const v = verdict(input, { ...entry, target });
    if ('remove' in v) remove.push({ name: entry.name, reason: v.remove });
    else keep.push({ name: entry.name, reason: v.keep });
  }
  return { remove, keep };
}
