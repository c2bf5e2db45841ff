/**
 * A registered CSI driver's Identity and Node services over its unix socket (the kubelet's
 * `csiDriverClient`): one gRPC channel per driver, a deadline on every call (the kubelet's
 * `csiTimeout`, 2 min), the caller's signal cancelling it, and failures worded as Go's gRPC status
 * errors (`rpc error: code = Internal desc = …`), which is what the kubelet's events quote.
 */
import type { Client } from '@grpc/grpc-js';
import type { CsiMountCapability, CsiNodeClient, CsiNodeInfo, NodePublishRequest, NodeStageRequest } from '../../reconcilers/volumes/csi/types.js';
import { isRecord } from '../../util/is-record.js';
import { isPluginCallError, unaryCall, unixClient } from './grpc-calls.js';
import { pluginMethod, wireList, wireString } from './proto.js';

const CSI_TIMEOUT_MS = 120_000;

/** gRPC status codes by number, as Go's `codes.Code.String()` spells them. */
const CODE_NAMES = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];

/** A failed driver call, with Go's gRPC error text. */
export class CsiCallError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    details: string,
  ) {
    super(`rpc error: code = ${CODE_NAMES[code] ?? `Code(${code})`} desc = ${details}`);
    this.name = 'CsiCallError';
  }
}

export function isCsiCallError(error: unknown): error is CsiCallError {
  return error instanceof CsiCallError;
}

function capabilityToWire(capability: CsiMountCapability): Record<string, unknown> {
  return {
    accessMode: { mode: capability.accessMode },
    mount: { fsType: capability.fsType, mountFlags: [...capability.mountFlags], volumeMountGroup: capability.volumeMountGroup ?? '' },
  };
}

/** The segments of `NodeGetInfoResponse.accessible_topology`. */
function topologyOf(response: Record<string, unknown>): Record<string, string> {
  const topology = isRecord(response.accessibleTopology) ? response.accessibleTopology : {};
  const segments = isRecord(topology.segments) ? topology.segments : {};
  return Object.fromEntries(Object.entries(segments).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

export class CsiDriverClient implements CsiNodeClient {
  private readonly client: Client;

  constructor(
    /** The driver's socket path. */
    readonly endpoint: string,
    private readonly timeoutMs = CSI_TIMEOUT_MS,
  ) {
    this.client = unixClient(endpoint);
  }

  close(): void {
    this.client.close();
  }

  /** `Identity/GetPluginInfo`: the driver's name and vendor version. */
  async getPluginInfo(signal?: AbortSignal): Promise<{ name: string; vendorVersion: string }> {
    const r = await this.call('Identity', 'GetPluginInfo', {}, signal);
    return { name: wireString(r.name), vendorVersion: wireString(r.vendorVersion) };
  }

  async nodeGetInfo(signal?: AbortSignal): Promise<CsiNodeInfo> {
    const r = await this.call('Node', 'NodeGetInfo', {}, signal);
    return { nodeId: wireString(r.nodeId), maxVolumesPerNode: Number(r.maxVolumesPerNode ?? 0), topology: topologyOf(r) };
  }

  async nodeGetCapabilities(signal?: AbortSignal): Promise<ReadonlySet<string>> {
    const r = await this.call('Node', 'NodeGetCapabilities', {}, signal);
    return new Set(wireList(r.capabilities).flatMap((c) => (isRecord(c) && isRecord(c.rpc) ? [wireString(c.rpc.type)] : [])));
  }

  async nodeStageVolume(request: NodeStageRequest, signal?: AbortSignal): Promise<void> {
    await this.call('Node', 'NodeStageVolume', {
      volumeId: request.volumeId,
      publishContext: { ...request.publishContext },
      stagingTargetPath: request.stagingTargetPath,
      volumeCapability: capabilityToWire(request.capability),
      secrets: { ...request.secrets },
      volumeContext: { ...request.volumeContext },
    }, signal);
  }

  async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, signal?: AbortSignal): Promise<void> {
    await this.call('Node', 'NodeUnstageVolume', { volumeId, stagingTargetPath }, signal);
  }

  async nodePublishVolume(request: NodePublishRequest, signal?: AbortSignal): Promise<void> {
    await this.call('Node', 'NodePublishVolume', {
      volumeId: request.volumeId,
      publishContext: { ...request.publishContext },
      stagingTargetPath: request.stagingTargetPath,
      targetPath: request.targetPath,
      volumeCapability: capabilityToWire(request.capability),
      readonly: request.readonly,
      secrets: { ...request.secrets },
      volumeContext: { ...request.volumeContext },
    }, signal);
  }

  async nodeUnpublishVolume(volumeId: string, targetPath: string, signal?: AbortSignal): Promise<void> {
    await this.call('Node', 'NodeUnpublishVolume', { volumeId, targetPath }, signal);
  }

  private async call(service: 'Identity' | 'Node', method: string, request: object, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    try {
      const response = await unaryCall(this.client, pluginMethod('csi', `csi.v1.${service}`, method), request, { timeoutMs: this.timeoutMs, signal });
      return isRecord(response) ? response : {};
    } catch (error) {
      if (isPluginCallError(error)) throw new CsiCallError(method, error.code, error.message);
      throw error;
    }
  }
}
