/**
 * emptyDir volumes (`pkg/volume/emptydir`): a directory, world-writable (0777) like the kubelet's,
 * created once per pod and kept across container restarts.
 *
 * `medium: Memory` is a plain directory on disk too: nodelet does not mount tmpfs (it would need
 * mount privileges and, when nodelet runs in a container, bidirectional mount propagation of its
 * root directory). `sizeLimit` is not enforced. HugePages media are not supported.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { statIfExists } from './fs-util.js';
import { applyFsGroup } from './ownership.js';
import type { EmptyDirSource } from './volume-kind.js';

/** The kubelet creates emptyDir directories 0777 so any container user can write them. */
const EMPTY_DIR_MODE = 0o777;

/** An emptyDir to create. */
export interface EmptyDirRequest {
  /** `<pod>/volumes/kubernetes.io~empty-dir/<name>`; its parent exists. */
  readonly dir: string;
  readonly source: EmptyDirSource;
  readonly fsGroup?: number;
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
  if ((await statIfExists(request.dir)) !== undefined) return;

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
