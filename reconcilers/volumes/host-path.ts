/**
 * hostPath volumes (`pkg/volume/hostpath`): the host path itself, after the `type` check.
 *
 * The path is resolved in nodelet's mount namespace; when nodelet runs in a container that is only
 * right for paths mounted into it at the same location.
 */
import { promises as fs } from 'node:fs';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { V1HostPathVolumeSource } from '@kubernetes/client-node';
import { statIfExists } from './fs-util.js';

/** `DirectoryOrCreate` makes missing directories 0755, like the kubelet. */
const CREATED_DIR_MODE = 0o755;
/** `FileOrCreate` makes a missing file 0644 (its parent directory must exist). */
const CREATED_FILE_MODE = 0o644;

type Check = (stat: Stats) => boolean;
const CHECKS: Readonly<Record<string, { readonly what: string; readonly check: Check }>> = {
  Directory: { what: 'a directory', check: (s) => s.isDirectory() },
  DirectoryOrCreate: { what: 'a directory', check: (s) => s.isDirectory() },
  File: { what: 'a file', check: (s) => s.isFile() },
  FileOrCreate: { what: 'a file', check: (s) => s.isFile() },
  Socket: { what: 'a socket', check: (s) => s.isSocket() },
  CharDevice: { what: 'a character device', check: (s) => s.isCharacterDevice() },
  BlockDevice: { what: 'a block device', check: (s) => s.isBlockDevice() },
};

async function createMissing(target: string, type: string): Promise<void> {
  if (type === 'DirectoryOrCreate') {
    await fs.mkdir(target, { recursive: true, mode: CREATED_DIR_MODE });
  } else if (type === 'FileOrCreate') {
    const handle = await fs.open(target, 'a', CREATED_FILE_MODE);
    await handle.close();
  }
}

/**
 * Checks (and for the `…OrCreate` types, creates) the host path.
 * @returns the host path to mount.
 * @throws Error when the path is not absolute, the type is unknown, or the check fails.
 */
export async function prepareHostPath(source: V1HostPathVolumeSource): Promise<string> {
  const target = source.path;
  if (!path.isAbsolute(target)) throw new Error(`hostPath "${target}" is not an absolute path`);
  const type = source.type ?? '';
  if (type === '') return target;
  const expected = CHECKS[type];
  if (expected === undefined) throw new Error(`hostPath type "${type}" is not valid`);

  let stat = await statIfExists(target);
  if (stat === undefined) {
    await createMissing(target, type);
    stat = await statIfExists(target);
  }
  if (stat === undefined) throw new Error(`hostPath type check failed: ${target} does not exist`);
  if (!expected.check(stat)) throw new Error(`hostPath type check failed: ${target} is not ${expected.what}`);
  return target;
}
