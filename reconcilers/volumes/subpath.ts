/**
 * subPath mounts on disk (the kubelet's `pkg/volume/util/subpath`): a missing subPath directory is
 * created inside its volume with the volume's mode (so non-root containers can still write an
 * emptyDir subPath), and a subPath that leaves its volume through a symlink — which a container
 * could plant in a shared emptyDir — is rejected.
 *
 * Known limit: the check and the runtime's bind mount are separate steps, so a container racing to
 * swap a path component for a symlink in between is not prevented (the kubelet closes that window
 * by bind-mounting an opened file descriptor).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import type { Mount } from '../../cri/types.js';
import { VolumeError } from './errors.js';
import { lstatIfExists } from './fs-util.js';
import { containerMounts, literalEnv, mountSubPath, type ContainerMountsOptions } from './mounts.js';
import type { PreparedVolumes } from './types.js';

function escapeError(volumeName: string, subPath: string, detail: string): VolumeError {
  return new VolumeError({
    reason: 'CreateContainerConfigError',
    volumeName,
    message: `subPath "${subPath}" of volume "${volumeName}": ${detail}`,
  });
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith('/') ? root : `${root}/`);
}

interface SubPathTarget {
  readonly volumeName: string;
  readonly volumePath: string;
  readonly subPath: string;
}

/**
 * Walks `subPath` inside the volume one element at a time, following symlinks only while they stay
 * inside, and creates missing directories with the volume root's permission bits.
 */
async function ensureSubPathInside(target: SubPathTarget): Promise<void> {
  const { volumeName, subPath } = target;
  const root = await fs.realpath(target.volumePath);
  const rootStat = await fs.stat(root);
  if (!rootStat.isDirectory()) throw escapeError(volumeName, subPath, 'the volume is not a directory');
  let current = root;
  const elements = subPath.split('/');
  for (const [index, element] of elements.entries()) {
    const next = path.join(current, element);
    const stat = await lstatIfExists(next);
    if (stat === undefined) {
      // The special bits too (setgid from fsGroup, sticky), as the kubelet's SafeMakeDir fchmods them.
      await fs.mkdir(next, { mode: rootStat.mode & 0o7777 });
      await fs.chmod(next, rootStat.mode & 0o7777);
      current = next;
      continue;
    }
    current = stat.isSymbolicLink() ? await fs.realpath(next) : next;
    if (!isInside(root, current)) throw escapeError(volumeName, subPath, 'resolves outside the volume');
    const isLast = index === elements.length - 1;
    if (!isLast && !(await fs.stat(current)).isDirectory()) throw escapeError(volumeName, subPath, `${element} is not a directory`);
  }
}

/**
 * The container's CRI mounts (see `containerMounts`), after making every subPath exist inside its
 * volume. Call it right before creating the container, each time (a container restart re-checks).
 * @throws VolumeError (`CreateContainerConfigError`) as `containerMounts` does, and when a subPath
 *   resolves outside its volume.
 */
export async function prepareContainerMounts(
  container: V1Container,
  prepared: PreparedVolumes,
  options: ContainerMountsOptions = {},
): Promise<Mount[]> {
  const mounts = containerMounts(container, prepared, options);
  const env = options.env ?? literalEnv(container);
  for (const mount of container.volumeMounts ?? []) {
    const volumePath = prepared.hostPaths.get(mount.name);
    const subPath = mountSubPath(mount, env);
    if (volumePath === undefined || subPath === '') continue;
    await ensureSubPathInside({ volumeName: mount.name, volumePath, subPath });
  }
  return mounts;
}

