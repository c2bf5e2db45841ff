/**
 * Atomic projection of a payload into a volume directory, in the kubelet's layout
 * (`pkg/volume/util/atomic_writer.go`), so a reader never sees a mix of old and new files:
 *
 * ```
 * <volume>/..2024_05_01_12_00_00.k3Xz9a/   real files (one directory per version)
 * <volume>/..data -> ..2024_05_01_12_00_00.k3Xz9a   swapped with one rename(2)
 * <volume>/key    -> ..data/key                   user-visible names (first path element only)
 * ```
 *
 * Names starting with `..` are reserved for the writer. Not safe for concurrent writers on one
 * directory; the caller serialises (one reconcile per pod at a time).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ensureDir, hasErrorCode, lstatIfExists } from './fs-util.js';
import type { Payload } from './payload.js';

const DATA_LINK = '..data';
const NEW_DATA_LINK = '..data_tmp';
const TIMESTAMP_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\./;
/** Group and others must be able to traverse the data directories. */
const DATA_DIR_MODE = 0o755;

/** What {@link writeAtomically} writes, and where. */
export interface AtomicWriteOptions {
  /** The volume directory; must exist. */
  readonly targetDir: string;
  /** The complete new contents (paths already cleaned by `cleanPayloadPath`). */
  readonly payload: Payload;
  /** Names the timestamped directory. */
  readonly now: Date;
  /** Applied to the new timestamped directory before it becomes visible (fsGroup ownership). */
  readonly setPerms?: (dir: string) => Promise<void>;
}

/**
 * Makes `targetDir` show exactly `payload`. Does nothing but repair missing user-visible links when
 * the current contents already match.
 * @returns true when a new version was written.
 */
export async function writeAtomically(options: AtomicWriteOptions): Promise<boolean> {
  const { targetDir, payload } = options;
  const oldVersion = await readDataLink(targetDir);
  const oldVersionDir = oldVersion === undefined ? undefined : path.join(targetDir, oldVersion);
  const stalePaths = oldVersionDir === undefined ? [] : await pathsToRemove(payload, oldVersionDir);
  if (oldVersionDir !== undefined && stalePaths.length === 0 && !(await payloadDiffers(payload, oldVersionDir))) {
    await createUserVisibleLinks(targetDir, payload);
    return false;
  }

  const versionDir = await createVersionDir(targetDir, options.now);
  try {
    await writePayloadTo(versionDir, payload);
    await options.setPerms?.(versionDir);
    await createUserVisibleLinks(targetDir, payload);
    await swapDataLink(targetDir, path.basename(versionDir));
  } catch (error) {
    await fs.rm(versionDir, { recursive: true, force: true });
    throw error;
  }
  await removeUserVisiblePaths(targetDir, stalePaths);
  await removeOtherVersions(targetDir, path.basename(versionDir));
  return true;
}

async function readDataLink(targetDir: string): Promise<string | undefined> {
  try {
    return await fs.readlink(path.join(targetDir, DATA_LINK));
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Paths of the current version that the new payload no longer has (ancestors of new paths are kept). */
async function pathsToRemove(payload: Payload, oldVersionDir: string): Promise<string[]> {
  let existing: string[];
  try {
    existing = await fs.readdir(oldVersionDir, { recursive: true });
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT')) return [];
    throw error;
  }
  const wanted = new Set<string>();
  for (const key of payload.keys()) {
    for (let p = key; p !== '.' && p !== ''; p = path.posix.dirname(p)) wanted.add(p);
  }
  return existing.filter((p) => !wanted.has(p));
}

/** Compares contents only, like the kubelet: modes and owners of one pod's volume never change. */
async function payloadDiffers(payload: Payload, oldVersionDir: string): Promise<boolean> {
  for (const [key, file] of payload) {
    const target = path.join(oldVersionDir, key);
    const stat = await lstatIfExists(target);
    if (!stat?.isFile()) return true;
    const onDisk = await fs.readFile(target);
    if (!onDisk.equals(file.data)) return true;
  }
  return false;
}

function timestampPrefix(now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.`;
}

async function createVersionDir(targetDir: string, now: Date): Promise<string> {
  const dir = await fs.mkdtemp(path.join(targetDir, timestampPrefix(now)));
  await fs.chmod(dir, DATA_DIR_MODE);
  return dir;
}

async function writePayloadTo(dir: string, payload: Payload): Promise<void> {
  for (const [key, file] of payload) {
    let parent = dir;
    for (const element of path.posix.dirname(key).split('/').filter((e) => e !== '.')) {
      parent = path.join(parent, element);
      await ensureDir(parent, DATA_DIR_MODE);
    }
    const target = path.join(dir, key);
    await fs.writeFile(target, file.data, { mode: file.mode, flag: 'wx' });
    await fs.chmod(target, file.mode);
    if (file.fsUser !== undefined) await fs.chown(target, file.fsUser, -1);
  }
}

/** `name -> ..data/name` for the first element of every payload path. */
async function createUserVisibleLinks(targetDir: string, payload: Payload): Promise<void> {
  const names = new Set([...payload.keys()].map((key) => key.split('/')[0] ?? key));
  for (const name of names) {
    const link = path.join(targetDir, name);
    if ((await lstatIfExists(link)) === undefined) await fs.symlink(path.join(DATA_LINK, name), link);
  }
}

async function swapDataLink(targetDir: string, versionName: string): Promise<void> {
  const newLink = path.join(targetDir, NEW_DATA_LINK);
  await fs.rm(newLink, { force: true });
  await fs.symlink(versionName, newLink);
  try {
    await fs.rename(newLink, path.join(targetDir, DATA_LINK));
  } catch (error) {
    await fs.rm(newLink, { force: true });
    throw error;
  }
}

/** Removes stale top-level names (deeper ones went with the old version directory). */
async function removeUserVisiblePaths(targetDir: string, stalePaths: readonly string[]): Promise<void> {
  for (const stale of stalePaths) {
    if (stale.includes('/')) continue;
    await fs.rm(path.join(targetDir, stale), { force: true });
  }
}

/** Removes every version directory but `keep`: the previous one and any left by an interrupted write. */
async function removeOtherVersions(targetDir: string, keep: string): Promise<void> {
  for (const entry of await fs.readdir(targetDir)) {
    if (entry !== keep && TIMESTAMP_DIR.test(entry)) {
      await fs.rm(path.join(targetDir, entry), { recursive: true, force: true });
    }
  }
}
