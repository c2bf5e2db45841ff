/**
 * The names of the container log links (the kubelet's "legacy" symlinks in `/var/log/containers`):
 * `<pod name>_<pod namespace>_<container name>-<container ID>.log`, which log collectors
 * (fluent-bit, promtail, vector) glob and parse for the pod, namespace, container and ID. Pure:
 * the links themselves are made and removed by `container-log-links.ts` and container GC.
 */

/** Every link name ends so; the kubelet's GC looks only at names that do. */
export const LOG_LINK_SUFFIX = '.log';

/** ext4's limit on a file name, which the kubelet cuts link names to. */
const MAX_FILE_NAME_LENGTH = 255;

/**
 * The shortest container ID a link name may carry: the runtime finds a container by a prefix this
 * long, and a name cut to the length limit may have lost the rest of its ID.
 */
const MIN_CONTAINER_ID_LENGTH = 6;

/** Whose log a link points at. */
export interface LogLinkOwner {
  readonly podName: string;
  readonly podNamespace: string;
  readonly containerName: string;
  /** The runtime's container ID (no `containerd://` prefix). */
  readonly containerId: string;
}

/**
 * The link's file name, as the kubelet names it: cut (before the suffix) so the whole name fits
 * 255 characters. Pod, namespace and container names are DNS labels and container IDs hex, so a
 * character is a byte here, as the kubelet counts.
 */
export function containerLogLinkName(owner: LogLinkOwner): string {
  const stem = `${owner.podName}_${owner.podNamespace}_${owner.containerName}-${owner.containerId}`;
  return stem.slice(0, MAX_FILE_NAME_LENGTH - LOG_LINK_SUFFIX.length) + LOG_LINK_SUFFIX;
}

/**
 * The container ID (or the prefix of it that survived the length limit) a link name carries: what
 * follows its last `-`, without the suffix. Undefined for a name that is not a link name (no
 * suffix, no `-`, or an ID too short to find a container by).
 */
export function containerIdOfLinkName(name: string): string | undefined {
  if (!name.endsWith(LOG_LINK_SUFFIX)) return undefined;
  const stem = name.slice(0, -LOG_LINK_SUFFIX.length);
  const dash = stem.lastIndexOf('-');
  if (dash < 0) return undefined;
  const id = stem.slice(dash + 1);
  return id.length < MIN_CONTAINER_ID_LENGTH ? undefined : id;
}
