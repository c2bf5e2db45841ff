/**
 * The CSI volume plugin's contracts (the kubelet's `pkg/volume/csi`): what it asks of a registered
 * driver's Node service and of the API server. The gRPC side lives in `controllers/plugins/`
 * (`csi-client.ts`), which implements {@link CsiNodeClient} and fills the {@link CsiDriverStore}
 * this room reads.
 */
import type { V1CSIDriver, V1Node, V1VolumeAttachment } from '@kubernetes/client-node';

/** The CSI access modes (`VolumeCapability.AccessMode.Mode`), by their names on the wire. */
export type CsiAccessMode =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

/** A mount volume capability (nodelet maps no block volumes). */
export interface CsiMountCapability {
  readonly accessMode: CsiAccessMode;
  readonly fsType: string;
  readonly mountFlags: readonly string[];
  /** The fsGroup the driver applies itself (VOLUME_MOUNT_GROUP); absent: none delegated. */
  readonly volumeMountGroup?: string;
}

/** `NodeStageVolume`'s request. */
export interface NodeStageRequest {
  readonly volumeId: string;
  readonly publishContext: Readonly<Record<string, string>>;
  readonly stagingTargetPath: string;
  readonly capability: CsiMountCapability;
  readonly secrets: Readonly<Record<string, string>>;
  readonly volumeContext: Readonly<Record<string, string>>;
}

/** `NodePublishVolume`'s request. */
export interface NodePublishRequest {
  readonly volumeId: string;
  readonly publishContext: Readonly<Record<string, string>>;
  /** Empty when the driver does not stage. */
  readonly stagingTargetPath: string;
  readonly targetPath: string;
  readonly capability: CsiMountCapability;
  readonly readonly: boolean;
  readonly secrets: Readonly<Record<string, string>>;
  readonly volumeContext: Readonly<Record<string, string>>;
}

/** What `NodeGetInfo` answers. */
export interface CsiNodeInfo {
  readonly nodeId: string;
  /** 0: no limit. */
  readonly maxVolumesPerNode: number;
  /** `accessible_topology.segments`; empty when the driver reports none. */
  readonly topology: Readonly<Record<string, string>>;
}

/**
 * A registered driver's Identity and Node services. Every call has a deadline and honours the
 * caller's signal; a failure rejects with the driver's gRPC status message.
 */
export interface CsiNodeClient {
  /** `NodeGetInfo`. */
  nodeGetInfo(signal?: AbortSignal): Promise<CsiNodeInfo>;
  /** `NodeGetCapabilities`: the RPC capability types, e.g. `STAGE_UNSTAGE_VOLUME`, `VOLUME_MOUNT_GROUP`. */
  nodeGetCapabilities(signal?: AbortSignal): Promise<ReadonlySet<string>>;
  nodeStageVolume(request: NodeStageRequest, signal?: AbortSignal): Promise<void>;
  nodeUnstageVolume(volumeId: string, stagingTargetPath: string, signal?: AbortSignal): Promise<void>;
  nodePublishVolume(request: NodePublishRequest, signal?: AbortSignal): Promise<void>;
  nodeUnpublishVolume(volumeId: string, targetPath: string, signal?: AbortSignal): Promise<void>;
}

/** The registered drivers, by name (the kubelet's `csiDrivers` store). */
export interface CsiDriverLookup {
  /** The driver's client, or undefined when no driver of that name is registered now. */
  client(driverName: string): CsiNodeClient | undefined;
}

/** What the CSI plugin reads from the API server. Each read resolves `undefined` for a missing object and throws on other failures. */
export interface CsiVolumeApi {
  readCSIDriver(name: string): Promise<V1CSIDriver | undefined>;
  readVolumeAttachment(name: string): Promise<V1VolumeAttachment | undefined>;
  readNode(name: string): Promise<V1Node | undefined>;
}

/** The CSI plugin's dependencies (absent from the volume manager: `csi` volumes are refused). */
export interface CsiPluginOptions {
  readonly drivers: CsiDriverLookup;
  readonly api: CsiVolumeApi;
  /** The node's name: VolumeAttachment names and `vol_data.json` carry it. */
  readonly nodeName: string;
  /** The set of volumes in use changed (the Node's `volumesInUse` should be posted again). */
  readonly onVolumesInUseChanged?: () => void;
  /** Deadline of one driver call (the kubelet's `csiTimeout`, 2 min). */
  readonly callTimeoutMs?: number;
}

/** The registered drivers, filled by the registration handler and read by the volume plugin. */
export class CsiDriverStore implements CsiDriverLookup {
  private readonly drivers = new Map<string, { readonly client: CsiNodeClient; readonly version: string }>();

  client(driverName: string): CsiNodeClient | undefined {
    return this.drivers.get(driverName)?.client;
  }

  /** The highest CSI version the registered driver of that name supports, if one is registered. */
  version(driverName: string): string | undefined {
    return this.drivers.get(driverName)?.version;
  }

  set(driverName: string, entry: { readonly client: CsiNodeClient; readonly version: string }): void {
    this.drivers.set(driverName, entry);
  }

  delete(driverName: string): void {
    this.drivers.delete(driverName);
  }

  names(): string[] {
    return [...this.drivers.keys()].sort();
  }
}
