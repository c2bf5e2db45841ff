/**
 * The file that keeps a pod's user namespace across agent restarts: `<root>/pods/<uid>/userns`, the
 * kubelet's name and JSON (`{"uidMappings":[{"hostId":…,"containerId":0,"length":…}],"gidMappings":[…]}`),
 * so a pod keeps its IDs (and the files it wrote keep their owners) for its whole life.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { PodIdRange } from './id-range.js';

/** The kubelet's file name in the pod directory. */
export const USERNS_FILE = 'userns';

interface FileMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/** The file's content cannot be a pod range this agent made (the kubelet's checks). */
export class UserNamespaceFileError extends Error {
  override readonly name = 'UserNamespaceFileError';
}

/** The path of a pod's file. */
export function usernsFilePath(rootDir: string, uid: string): string {
  return path.join(rootDir, 'pods', uid, USERNS_FILE);
}

/** The file's content for a pod range: one mapping from 0, the same for UIDs and GIDs. */
export function formatUsernsFile(range: PodIdRange): string {
  const mapping: FileMapping = { hostId: range.hostId, containerId: 0, length: range.length };
  return JSON.stringify({ uidMappings: [mapping], gidMappings: [mapping] });
}

function isMapping(value: unknown): value is FileMapping {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as Partial<Record<keyof FileMapping, unknown>>;
  return [m.hostId, m.containerId, m.length].every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0);
}

/**
 * The pod range in a file's content, with the kubelet's checks: one mapping, UIDs equal to GIDs, 0 mapped.
 * @throws UserNamespaceFileError
 */
export function parseUsernsFile(content: string): PodIdRange {
  let parsed: { uidMappings?: unknown; gidMappings?: unknown };
  try {
    parsed = JSON.parse(content) as typeof parsed;
  } catch (error) {
    throw new UserNamespaceFileError(`invalid user namespace mappings file: ${error instanceof Error ? error.message : String(error)}`);
  }
  const uids: unknown[] = Array.isArray(parsed.uidMappings) ? parsed.uidMappings : [];
  const gids: unknown[] = Array.isArray(parsed.gidMappings) ? parsed.gidMappings : [];
  if (uids.length !== 1) throw new UserNamespaceFileError('invalid user namespace configuration: no more than one mapping allowed.');
  if (gids.length !== uids.length) throw new UserNamespaceFileError('invalid user namespace configuration: GID and UID mappings should be identical.');
  const [uid, gid] = [uids[0], gids[0]];
  if (!isMapping(uid) || !isMapping(gid)) throw new UserNamespaceFileError('invalid user namespace configuration: a mapping is not three non-negative integers');
  if (uid.hostId !== gid.hostId || uid.containerId !== gid.containerId || uid.length !== gid.length) throw new UserNamespaceFileError('invalid user namespace configuration: GID and UID mapping should be identical');
  if (uid.containerId !== 0) throw new UserNamespaceFileError('invalid user namespace configuration: UID 0 must be mapped');
  return { hostId: uid.hostId, length: uid.length };
}

/** Reads a pod's file; undefined when it has none (a pod without a user namespace, or a new one). */
export async function readUsernsFile(rootDir: string, uid: string): Promise<string | undefined> {
  try {
    return await readFile(usernsFilePath(rootDir, uid), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Writes a pod's file durably before the range is used: to a temporary file, synced, renamed over,
 * and the directory synced (a crash leaves the old file or the new one, never a torn one, and the
 * new one survives a power loss), as the kubelet's file store and its parent fsync do.
 */
export async function writeUsernsFile(rootDir: string, uid: string, range: PodIdRange): Promise<void> {
  const target = usernsFilePath(rootDir, uid);
  const dir = path.dirname(target);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const temporary = `${target}.tmp`;
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(formatUsernsFile(range));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, target);
  const directory = await open(dir, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
