/**
 * The shapes of CRI messages as @grpc/proto-loader hands them over with the loader options of
 * `proto.ts` (camelCase fields, `longs: String`, `enums: String`, `defaults: true`).
 *
 * Decoded messages always carry every scalar, repeated and map field (defaults filled in), while
 * an unset message-typed field is `null`. int64/uint64 values are decimal strings; enum values are
 * their names, or the bare number when the runtime sends a value this proto does not know.
 * Only the fields `convert-response.ts` reads are declared.
 */
import type { ImageMethod, RuntimeMethod } from './proto.js';

export type WireMap = Record<string, string>;
/** An enum as decoded: its name, or the number when the name is unknown to our proto. */
export type WireEnum = string | number;

export interface WireVersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface WireRuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface WireRuntimeHandler {
  name: string;
  features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean } | null;
}

export interface WireRuntimeConfigResponse {
  linux: { cgroupDriver: WireEnum } | null;
}

export interface WireStatusResponse {
  status: { conditions: WireRuntimeCondition[] } | null;
  runtimeHandlers: WireRuntimeHandler[];
  features: { supplementalGroupsPolicy: boolean; userNamespacesHostNetwork: boolean; mountOptions: boolean } | null;
}

export interface WirePodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface WirePodSandbox {
  id: string;
  metadata: WirePodSandboxMetadata | null;
  state: WireEnum;
  createdAt: string;
  labels: WireMap;
  annotations: WireMap;
  runtimeHandler: string;
}

export interface WirePodSandboxStatus {
  id: string;
  metadata: WirePodSandboxMetadata | null;
  state: WireEnum;
  createdAt: string;
  network: { ip: string; additionalIps: { ip: string }[] } | null;
  labels: WireMap;
  annotations: WireMap;
  runtimeHandler: string;
}

export interface WireRunPodSandboxResponse {
  podSandboxId: string;
}

export interface WirePodSandboxStatusResponse {
  status: WirePodSandboxStatus | null;
}

export interface WireListPodSandboxResponse {
  items: WirePodSandbox[];
}

export interface WireContainerMetadata {
  name: string;
  attempt: number;
}

export interface WireImageSpec {
  image: string;
  annotations: WireMap;
}

export interface WireMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  selinuxRelabel: boolean;
  propagation: WireEnum;
  /** Set on an image volume's mount (absent from runtimes without image volumes). */
  image?: WireImageSpec | null;
  imageSubPath?: string;
}

export interface WireContainer {
  id: string;
  podSandboxId: string;
  metadata: WireContainerMetadata | null;
  image: WireImageSpec | null;
  imageRef: string;
  state: WireEnum;
  createdAt: string;
  labels: WireMap;
  annotations: WireMap;
}

export interface WireContainerStatus {
  id: string;
  metadata: WireContainerMetadata | null;
  state: WireEnum;
  createdAt: string;
  startedAt: string;
  finishedAt: string;
  exitCode: number;
  image: WireImageSpec | null;
  imageRef: string;
  reason: string;
  message: string;
  labels: WireMap;
  annotations: WireMap;
  mounts: WireMount[];
  logPath: string;
  /** Absent from runtimes that do not report it; containerd 1.6 sends the Linux values. */
  resources: { linux: WireLinuxResources | null } | null;
  /** Absent from runtimes without supplemental_groups_policy (containerd 1.6). */
  user: { linux: { uid: string; gid: string; supplementalGroups: string[] } | null } | null;
}

/** The Linux cgroup values a runtime reports for a container (int64 as strings). */
export interface WireLinuxResources {
  cpuPeriod: string;
  cpuQuota: string;
  cpuShares: string;
  memoryLimitInBytes: string;
}

export interface WireCreateContainerResponse {
  containerId: string;
}

export interface WireListContainersResponse {
  containers: WireContainer[];
}

export interface WireContainerStatusResponse {
  status: WireContainerStatus | null;
}

export interface WireExecSyncResponse {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

/** `ExecResponse`, `AttachResponse` and `PortForwardResponse`: the runtime's streaming URL. */
export interface WireStreamingResponse {
  url: string;
}

export interface WireImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: string;
  uid: { value: string } | null;
  username: string;
  pinned: boolean;
}

export interface WireImageStatusResponse {
  image: WireImage | null;
}

export interface WireListImagesResponse {
  images: WireImage[];
}

export interface WireFilesystemUsage {
  timestamp: string;
  fsId: { mountpoint: string } | null;
  usedBytes: { value: string } | null;
  inodesUsed: { value: string } | null;
}

export interface WireImageFsInfoResponse {
  imageFilesystems: WireFilesystemUsage[];
}

export interface WirePullImageResponse {
  imageRef: string;
}

export interface WireUInt64 {
  value: string;
}

export interface WireContainerStats {
  attributes: { id: string; metadata: WireContainerMetadata | null; labels: WireMap; annotations: WireMap } | null;
  cpu: { timestamp: string; usageCoreNanoSeconds: WireUInt64 | null; usageNanoCores: WireUInt64 | null } | null;
  memory: {
    timestamp: string;
    workingSetBytes: WireUInt64 | null;
    availableBytes: WireUInt64 | null;
    usageBytes: WireUInt64 | null;
    rssBytes: WireUInt64 | null;
    pageFaults: WireUInt64 | null;
    majorPageFaults: WireUInt64 | null;
  } | null;
  writableLayer: WireFilesystemUsage | null;
  swap?: { timestamp: string; swapAvailableBytes: WireUInt64 | null; swapUsageBytes: WireUInt64 | null } | null;
}

export interface WireListContainerStatsResponse {
  stats: WireContainerStats[];
}

/** The decoded response of each RuntimeService method nodelet calls. */
export interface RuntimeResponses extends Record<RuntimeMethod, object> {
  Version: WireVersionResponse;
  Status: WireStatusResponse;
  RuntimeConfig: WireRuntimeConfigResponse;
  CheckpointContainer: object;
  RunPodSandbox: WireRunPodSandboxResponse;
  StopPodSandbox: object;
  RemovePodSandbox: object;
  PodSandboxStatus: WirePodSandboxStatusResponse;
  ListPodSandbox: WireListPodSandboxResponse;
  CreateContainer: WireCreateContainerResponse;
  StartContainer: object;
  StopContainer: object;
  RemoveContainer: object;
  ListContainers: WireListContainersResponse;
  ContainerStatus: WireContainerStatusResponse;
  UpdateContainerResources: object;
  ReopenContainerLog: object;
  ExecSync: WireExecSyncResponse;
  Exec: WireStreamingResponse;
  Attach: WireStreamingResponse;
  PortForward: WireStreamingResponse;
  ListContainerStats: WireListContainerStatsResponse;
}

/** The decoded response of each ImageService method nodelet calls. */
export interface ImageResponses extends Record<ImageMethod, object> {
  ImageStatus: WireImageStatusResponse;
  PullImage: WirePullImageResponse;
  ListImages: WireListImagesResponse;
  RemoveImage: object;
  ImageFsInfo: WireImageFsInfoResponse;
}
