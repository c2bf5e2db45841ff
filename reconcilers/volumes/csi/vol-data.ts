/**
 * `vol_data.json`, the kubelet's record of a CSI volume beside its mount directory: written before
 * the driver is called, so a teardown after an agent kill (even mid-publish) knows the driver and
 * the volume handle without the pod's spec. The keys are the kubelet's (`volDataKey`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isRecord } from '../../../util/is-record.js';
import { VOL_DATA_FILE } from './paths.js';

/** The kubelet's keys; a staging directory's file holds only `driverName` and `volumeHandle`. */
export interface VolData {
  readonly driverName: string;
  readonly volumeHandle: string;
  readonly specVolID?: string;
  readonly nodeName?: string;
  readonly attachmentID?: string;
  readonly volumeLifecycleMode?: string;
}

/** Writes `<dir>/vol_data.json` (the directory is made 0750 if missing). */
export async function saveVolData(dir: string, data: VolData): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o750 });
  const file = path.join(dir, VOL_DATA_FILE);
  await fs.writeFile(`${file}.tmp`, JSON.stringify(data), { mode: 0o640 });
  await fs.rename(`${file}.tmp`, file);
}

function parse(text: string): VolData | undefined {
  const parsed: unknown = JSON.parse(text);
  if (!isRecord(parsed)) return undefined;
  const str = (key: string): string | undefined => (typeof parsed[key] === 'string' ? parsed[key] : undefined);
  const driverName = str('driverName');
  const volumeHandle = str('volumeHandle');
  if (driverName === undefined || volumeHandle === undefined) return undefined;
  const optional = ['specVolID', 'nodeName', 'attachmentID', 'volumeLifecycleMode'].flatMap((key) => {
    const value = str(key);
    return value === undefined ? [] : [[key, value] as const];
  });
  return { driverName, volumeHandle, ...Object.fromEntries(optional) };
}

/** `<dir>/vol_data.json`, or undefined when there is none. @throws when it is unreadable or not the kubelet's shape */
export async function loadVolData(dir: string): Promise<VolData | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(dir, VOL_DATA_FILE), 'utf8');
  } catch (error) {
    if (isRecord(error) && error.code === 'ENOENT') return undefined;
    throw error;
  }
  const data = parse(text);
  if (data === undefined) throw new Error(`${path.join(dir, VOL_DATA_FILE)}: not a CSI volume record`);
  return data;
}

/**
 * The records of every pod's CSI volumes (`<root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/vol_data.json`),
 * read synchronously: a directory listing per pod on the node, for the Node's volumesInUse and
 * the decision to unstage. Unreadable records are skipped.
 */
export function podVolDataOnDisk(rootDir: string): { readonly podUid: string; readonly dir: string; readonly data: VolData }[] {
  const found: { podUid: string; dir: string; data: VolData }[] = [];
  const list = (dir: string): string[] => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  const podsDir = path.join(rootDir, 'pods');
  for (const podUid of list(podsDir)) {
    const pluginDir = path.join(podsDir, podUid, 'volumes', 'kubernetes.io~csi');
    for (const name of list(pluginDir)) {
      const dir = path.join(pluginDir, name);
      try {
        const data = parse(readFileSync(path.join(dir, VOL_DATA_FILE), 'utf8'));
        if (data !== undefined) found.push({ podUid, dir, data });
      } catch {
        // no record (yet), or a torn one: not a volume in use
      }
    }
  }
  return found;
}
