/**
 * Pod-level volume ownership, as the kubelet applies it (`pkg/volume/volume_linux.go`
 * `SetVolumeOwnership`): with `securityContext.fsGroup`, every file gets that group, group read
 * (and write on writable volumes), and directories get group traverse plus setgid so new files
 * inherit the group.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';

const READ_WRITE_MASK = 0o660;
const READ_ONLY_MASK = 0o440;
const DIR_EXTRA_MASK = 0o2110; // setgid + group/owner traverse

/** How to apply an fsGroup to a directory tree. */
export interface FsGroupOwnership {
  readonly gid: number;
  /** Read-only volume kinds (configMap, secret, projected, downwardAPI) get group read, not write. */
  readonly readOnly: boolean;
}

/** Applies the fsGroup to `root` and everything below it, never following symlinks. */
export async function applyFsGroup(root: string, ownership: FsGroupOwnership): Promise<void> {
  const mask = ownership.readOnly ? READ_ONLY_MASK : READ_WRITE_MASK;
  const entries = [root, ...(await fs.readdir(root, { recursive: true })).map((p) => path.join(root, p))];
  for (const entry of entries) {
    const stat = await fs.lstat(entry);
    await fs.lchown(entry, -1, ownership.gid);
    if (stat.isSymbolicLink()) continue;
    const extra = stat.isDirectory() ? mask | DIR_EXTRA_MASK : mask;
    await fs.chmod(entry, (stat.mode & 0o7777) | extra);
  }
}

/** The pod's `securityContext.fsGroup`, if any. */
export function fsGroupOf(pod: V1Pod): number | undefined {
  return pod.spec?.securityContext?.fsGroup;
}

/**
 * The single user every init and regular container runs as (container `runAsUser`, else the
 * pod's), or `undefined` when one of them sets none or they differ — the kubelet's `FsUserFrom`.
 * The service-account token is then owned by that user with mode 0600.
 */
export function fsUserOf(pod: V1Pod): number | undefined {
  const containers: V1Container[] = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const podUser = pod.spec?.securityContext?.runAsUser;
  let fsUser: number | undefined;
  for (const container of containers) {
    const user = container.securityContext?.runAsUser ?? podUser;
    if (user === undefined || (fsUser !== undefined && fsUser !== user)) return undefined;
    fsUser = user;
  }
  return fsUser;
}
