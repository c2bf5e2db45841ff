/**
 * The device manager's checkpoint, `<root>/device-plugins/kubelet_internal_checkpoint`, in the
 * kubelet's JSON layout (`checkpoint.Data`):
 *
 * ```json
 * {"Data":{"PodDeviceEntries":[{"PodUID":"…","ContainerName":"…","ResourceName":"example.com/resource",
 *   "DeviceIDs":{"-1":["Dev-1"]},"AllocResp":"<base64 of the protobuf ContainerAllocateResponse>"}],
 *  "RegisteredDevices":{"example.com/resource":["Dev-1","Dev-2"]}},"Checksum":1234567890}
 * ```
 *
 * One difference, on purpose: the kubelet's `Checksum` is FNV-32a over Go's `spew` print of the
 * data, which cannot be reproduced outside Go; nodelet's is FNV-32a over the JSON text of `Data`
 * as written. A file whose checksum does not match is corrupt ({@link CorruptDeviceCheckpointError}),
 * as the kubelet refuses a corrupt checkpoint; a kubelet's own file therefore reads as corrupt.
 *
 * The file is written whole to a temporary name and renamed, so a crash leaves the old or the new
 * checkpoint, never half of one.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isRecord } from '../../util/is-record.js';
import type { ContainerAllocation } from './types.js';
import type { PodDevicesEntry } from './pod-devices.js';

/** The checkpoint's file name in the device-plugin directory (the kubelet's). */
export const DEVICE_CHECKPOINT_FILE = 'kubelet_internal_checkpoint';

/** What the checkpoint holds. */
export interface DeviceCheckpoint {
  readonly entries: readonly PodDevicesEntry[];
  /** Healthy device IDs per resource when written; a restarted agent knows the resources from it. */
  readonly registeredDevices: Readonly<Record<string, readonly string[]>>;
}

/** Protobuf bytes of a `ContainerAllocateResponse` and back (implemented over the vendored proto in `controllers/plugins/`). */
export interface AllocationCodec {
  encode(allocation: ContainerAllocation): Uint8Array;
  decode(bytes: Uint8Array): ContainerAllocation;
}

/** The checkpoint file cannot be read as a checkpoint (bad JSON, bad shape, or a checksum that does not match). */
export class CorruptDeviceCheckpointError extends Error {
  constructor(
    readonly file: string,
    why: string,
  ) {
    super(`device manager checkpoint ${file} is corrupt: ${why}`);
    this.name = 'CorruptDeviceCheckpointError';
  }
}

export function isCorruptDeviceCheckpointError(error: unknown): error is CorruptDeviceCheckpointError {
  return error instanceof CorruptDeviceCheckpointError;
}

/** FNV-32a of a string's UTF-8 bytes. */
export function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

interface WireEntry {
  PodUID: string;
  ContainerName: string;
  ResourceName: string;
  DeviceIDs: Record<string, string[]>;
  AllocResp: string;
}

/** The checkpoint's text. */
export function encodeDeviceCheckpoint(checkpoint: DeviceCheckpoint, codec: AllocationCodec): string {
  const entries: WireEntry[] = checkpoint.entries.map((e) => ({
    PodUID: e.podUid,
    ContainerName: e.containerName,
    ResourceName: e.resourceName,
    DeviceIDs: Object.fromEntries(Object.entries(e.devicesPerNuma).map(([numa, ids]) => [numa, [...ids]])),
    AllocResp: Buffer.from(codec.encode(e.allocation)).toString('base64'),
  }));
  const registered = Object.fromEntries(Object.entries(checkpoint.registeredDevices).map(([name, ids]) => [name, [...ids]]));
  const data = JSON.stringify({ PodDeviceEntries: entries, RegisteredDevices: registered });
  return `{"Data":${data},"Checksum":${fnv32a(data)}}`;
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined;
}

function decodeEntry(value: unknown, codec: AllocationCodec): PodDevicesEntry | undefined {
  if (!isRecord(value)) return undefined;
  const { PodUID, ContainerName, ResourceName, DeviceIDs, AllocResp } = value;
  if (typeof PodUID !== 'string' || typeof ContainerName !== 'string' || typeof ResourceName !== 'string' || !isRecord(DeviceIDs)) return undefined;
  const devicesPerNuma: Record<string, string[]> = {};
  for (const [numa, ids] of Object.entries(DeviceIDs)) {
    const list = stringArray(ids);
    if (list === undefined) return undefined;
    devicesPerNuma[numa] = list;
  }
  const bytes = typeof AllocResp === 'string' ? Buffer.from(AllocResp, 'base64') : Buffer.alloc(0);
  return { podUid: PodUID, containerName: ContainerName, resourceName: ResourceName, devicesPerNuma, allocation: codec.decode(bytes) };
}

/** Reads a checkpoint's text. @throws CorruptDeviceCheckpointError */
export function decodeDeviceCheckpoint(text: string, codec: AllocationCodec, file = DEVICE_CHECKPOINT_FILE): DeviceCheckpoint {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CorruptDeviceCheckpointError(file, 'not JSON');
  }
  if (!isRecord(parsed) || !isRecord(parsed.Data)) throw new CorruptDeviceCheckpointError(file, 'no Data');
  if (parsed.Checksum !== fnv32a(JSON.stringify(parsed.Data))) throw new CorruptDeviceCheckpointError(file, 'checksum mismatch');
  const { PodDeviceEntries, RegisteredDevices } = parsed.Data;
  const entries = (Array.isArray(PodDeviceEntries) ? PodDeviceEntries : []).map((e: unknown) => decodeEntry(e, codec));
  if (entries.some((e) => e === undefined)) throw new CorruptDeviceCheckpointError(file, 'bad PodDeviceEntries');
  const registeredDevices: Record<string, string[]> = {};
  for (const [name, ids] of Object.entries(isRecord(RegisteredDevices) ? RegisteredDevices : {})) registeredDevices[name] = stringArray(ids) ?? [];
  return { entries: entries.filter((e) => e !== undefined), registeredDevices };
}

/** The checkpoint on disk; an empty one when there is no file. @throws CorruptDeviceCheckpointError */
export async function readDeviceCheckpoint(file: string, codec: AllocationCodec): Promise<DeviceCheckpoint> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isRecord(error) && error.code === 'ENOENT') return { entries: [], registeredDevices: {} };
    throw error;
  }
  return decodeDeviceCheckpoint(text, codec, file);
}

/** Writes the checkpoint atomically (temporary file, then rename). */
export async function writeDeviceCheckpoint(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await rename(temporary, file);
}
