/**
 * emptyDir volumes (`pkg/volume/emptydir`): a directory, world-writable (0777) like the kubelet's,
 * created once per pod and kept across container restarts.
 *
 * `medium: Memory` is a tmpfs mounted on that directory, as the kubelet mounts it, sized like the
 * kubelet's memory-backed volumes: the smallest of `sizeLimit`, the pod's memory limit (when every
 * container has one) and the node's allocatable memory. The mount needs root on the host (or a
 * privileged agent with bidirectional propagation of its root directory). The volume manager
 * unmounts it before removing the pod's directory. A disk-backed `sizeLimit` is not enforced yet
 * (the kubelet enforces it by eviction). HugePages media are refused.
 */
import { promises as fs } from 'node:fs';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../model/quantity.js';
import path from 'node:path';
import { statIfExists } from './fs-util.js';
import { mountAt, mountTmpfs } from './mounts-table.js';
import { applyFsGroup } from './ownership.js';
import type { EmptyDirSource } from './volume-kind.js';

/** The kubelet creates emptyDir directories 0777 so any container user can write them. */
const EMPTY_DIR_MODE = 0o777;

/** The root of a `medium: Memory` emptyDir: what tmpfs gives a mount without a mode option. */
const TMPFS_ROOT_MODE = 0o1777;

/** An emptyDir to create. */
export interface EmptyDirRequest {
  /** `<pod>/volumes/kubernetes.io~empty-dir/<name>`; its parent exists. */
  readonly dir: string;
  readonly source: EmptyDirSource;
  readonly fsGroup?: number;
  /** For `medium: Memory`: the tmpfs size in bytes (see the file header). */
  readonly memoryBytes?: number;
}

function memoryLimitOf(container: V1Container): number | undefined {
  const limit = container.resources?.limits?.memory;
  return limit === undefined ? undefined : parseQuantity(limit);
}

/**
 * The size of a memory-backed emptyDir, as the kubelet computes it: the node's allocatable
 * memory, lowered to the pod's memory limit when every container has one, lowered again to the
 * volume's `sizeLimit` when that is smaller (a zero or larger value changes nothing).
 */
export function memoryVolumeBytes(pod: V1Pod, source: EmptyDirSource, nodeAllocatableBytes: number): number {
  let size = nodeAllocatableBytes;
  const limits = (pod.spec?.containers ?? []).map(memoryLimitOf);
  if (limits.length > 0 && limits.every((l): l is number => l !== undefined)) {
    const podLimit = limits.reduce((a, b) => a + b, 0);
    if (podLimit > 0 && podLimit <= size) size = podLimit;
  }
  const sizeLimit = source.sizeLimit === undefined ? undefined : parseQuantity(source.sizeLimit);
  if (sizeLimit !== undefined && sizeLimit > 0 && sizeLimit <= size) size = sizeLimit;
  return Math.floor(size);
}

/** True for the media nodelet serves with a plain directory (`''` = node disk, `Memory`). */
export function isSupportedEmptyDirMedium(medium: string | undefined): boolean {
  return medium === undefined || medium === '' || medium === 'Memory';
}

/**
 * Creates the directory (with fsGroup ownership) unless it exists. It appears under its final name
 * only once fully set up, so an interrupted call is simply redone.
 * @throws Error for an unsupported medium.
 */
export async function prepareEmptyDir(request: EmptyDirRequest): Promise<void> {
  const { medium } = request.source;
  if (!isSupportedEmptyDirMedium(medium)) throw new Error(`emptyDir medium "${medium ?? ''}" is not supported by nodelet`);
  if ((await statIfExists(request.dir)) === undefined) await createDir(request);
  if (medium === 'Memory') await ensureTmpfs(request);
}

/** Mounts the tmpfs unless it is mounted already (a restarted agent finds it in place). */
async function ensureTmpfs(request: EmptyDirRequest): Promise<void> {
  if ((await mountAt(request.dir))?.fsType === 'tmpfs') return;
  const size = request.memoryBytes === undefined ? [] : [`size=${request.memoryBytes}`];
  await mountTmpfs(request.dir, size);
  // As the kubelet, no mode option: the tmpfs root keeps tmpfs's own 1777 (world-writable and
  // sticky; fsGroup adds setgid). Set explicitly, since the mount hides the directory's mode.
  await fs.chmod(request.dir, TMPFS_ROOT_MODE);
  if (request.fsGroup !== undefined) await applyFsGroup(request.dir, { gid: request.fsGroup, readOnly: false });
}

async function createDir(request: EmptyDirRequest): Promise<void> {
  const staging = await fs.mkdtemp(path.join(path.dirname(request.dir), `.${path.basename(request.dir)}.creating-`));
  try {
    await fs.chmod(staging, EMPTY_DIR_MODE);
    if (request.fsGroup !== undefined) await applyFsGroup(staging, { gid: request.fsGroup, readOnly: false });
    await fs.rename(staging, request.dir);
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw error;
  }
}
