/**
 * The kubelet's plugin APIs, loaded at run time from the vendored `.proto` files (`protos/`, see
 * its README for the upstream paths and licence), and the conversions between their wire shapes
 * and the device manager's vocabulary (`reconcilers/devices/types.ts`).
 *
 * Wire shapes are proto-loader's: camelCase field names (`ID` stays `ID`), int64 as strings, enums
 * by name, defaults filled in. Everything read off the wire is narrowed here, never trusted.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSync, type MethodDefinition, type PackageDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { isRecord } from '../../util/is-record.js';
import type { AllocationCodec } from '../../reconcilers/devices/checkpoint.js';
import type { ContainerAllocation, PluginDevice } from '../../reconcilers/devices/types.js';

const LOADER_OPTIONS = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: false };

/** The vendored files, relative to `protos/`. */
const FILES = {
  deviceplugin: 'k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto',
  pluginregistration: 'k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto',
  podresources: 'k8s.io/kubelet/pkg/apis/podresources/v1/api.proto',
  csi: 'github.com/container-storage-interface/spec/csi.proto',
} as const;

export type PluginApi = keyof typeof FILES;

/** The candidates: next to this module (source tree), or the source tree's copy from `dist/controllers/plugins/`. */
const ROOTS = ['./protos/', '../../../controllers/plugins/protos/'];

function locate(api: PluginApi): string {
  for (const root of ROOTS) {
    const file = fileURLToPath(new URL(root + FILES[api], import.meta.url));
    if (existsSync(file)) return file;
  }
  throw new Error(`${FILES[api]} not found under controllers/plugins/protos/`);
}

const loaded = new Map<PluginApi, PackageDefinition>();

function packageOf(api: PluginApi): PackageDefinition {
  let definition = loaded.get(api);
  if (definition === undefined) loaded.set(api, (definition = loadSync(locate(api), LOADER_OPTIONS)));
  return definition;
}

/** A service of one API, e.g. `pluginService('deviceplugin', 'v1beta1.Registration')`. */
export function pluginService(api: PluginApi, name: string): ServiceDefinition {
  const definition = packageOf(api)[name];
  if (definition === undefined || 'format' in definition) throw new Error(`${FILES[api]} has no service ${name}`);
  return definition;
}

/** One method of a service. */
export function pluginMethod(api: PluginApi, service: string, method: string): MethodDefinition<object, object> {
  const definition = pluginService(api, service)[method];
  if (definition === undefined) throw new Error(`${FILES[api]} has no method ${service}/${method}`);
  return definition;
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const strings = (value: unknown): string[] => list(value).filter((v): v is string => typeof v === 'string');
const stringMap = (value: unknown): Record<string, string> => Object.fromEntries(Object.entries(isRecord(value) ? value : {}).filter((e): e is [string, string] => typeof e[1] === 'string'));

/** A `ListAndWatchResponse`'s devices. */
export function devicesFromWire(response: unknown): PluginDevice[] {
  const devices = isRecord(response) ? list(response.devices) : [];
  return devices.filter(isRecord).map((d) => {
    const nodes = isRecord(d.topology) ? list(d.topology.nodes).filter(isRecord).map((n) => Number(n.ID)) : [];
    return { id: str(d.ID), health: d.health === 'Healthy' ? 'Healthy' : 'Unhealthy', numaNodes: nodes.filter((n) => Number.isInteger(n)) };
  });
}

/** One `ContainerAllocateResponse`. */
export function allocationFromWire(response: unknown): ContainerAllocation {
  const r = isRecord(response) ? response : {};
  return {
    envs: stringMap(r.envs),
    mounts: list(r.mounts).filter(isRecord).map((m) => ({ containerPath: str(m.containerPath), hostPath: str(m.hostPath), readOnly: m.readOnly === true })),
    devices: list(r.devices).filter(isRecord).map((d) => ({ containerPath: str(d.containerPath), hostPath: str(d.hostPath), permissions: str(d.permissions) })),
    annotations: stringMap(r.annotations),
    cdiDevices: list(r.cdiDevices).filter(isRecord).map((c) => str(c.name)).filter((n) => n !== ''),
  };
}

/** A `ContainerAllocateResponse`'s wire shape. */
export function allocationToWire(allocation: ContainerAllocation): Record<string, unknown> {
  return {
    envs: { ...allocation.envs },
    mounts: allocation.mounts.map((m) => ({ ...m })),
    devices: allocation.devices.map((d) => ({ ...d })),
    annotations: { ...allocation.annotations },
    cdiDevices: allocation.cdiDevices.map((name) => ({ name })),
  };
}

export { strings as wireStrings, str as wireString, list as wireList };

/** Reads a protobuf length-delimited field header (tag 1) and returns the payload bounds. */
function firstField(bytes: Uint8Array): Uint8Array {
  let length = 0;
  let shift = 0;
  let at = 1;
  for (;;) {
    const byte = bytes[at++] ?? 0;
    length += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  return bytes.subarray(at, at + length);
}

function varint(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/**
 * The checkpoint's `AllocResp`: the protobuf bytes of one `ContainerAllocateResponse`, as the
 * kubelet stores it. proto-loader serializes messages only as a method's request or response, so
 * the bytes are those of an `AllocateResponse` holding it as its one `container_responses` (field
 * 1, length-delimited): the payload of that field is the message itself.
 */
export const allocationCodec: AllocationCodec = {
  encode(allocation) {
    const method = pluginMethod('deviceplugin', 'v1beta1.DevicePlugin', 'Allocate');
    const outer = method.responseSerialize({ containerResponses: [allocationToWire(allocation)] });
    return outer.length === 0 ? new Uint8Array() : firstField(outer);
  },
  decode(bytes) {
    const method = pluginMethod('deviceplugin', 'v1beta1.DevicePlugin', 'Allocate');
    const outer = Buffer.concat([Buffer.from([0x0a, ...varint(bytes.length)]), Buffer.from(bytes)]);
    const response: unknown = method.responseDeserialize(outer);
    return allocationFromWire(isRecord(response) ? list(response.containerResponses)[0] : undefined);
  },
};
