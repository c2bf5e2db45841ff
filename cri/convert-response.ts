/**
 * Wire → `types.ts`: converts and validates what the runtime answered. Pure functions.
 *
 * Validation follows the CRI client contract: an object the caller will address by ID must have
 * one, and a status must carry its metadata; anything less is a `CriInvalidResponseError` rather
 * than a half-filled object that would fail later, far from the cause.
 */
import { CriInvalidResponseError } from './errors.js';
import type {
  AppliedLinuxResources,
  ContainerProcessUser,
  Container,
  ContainerMetadata,
  ContainerState,
  ContainerStatus,
  ExecSyncResult,
  FilesystemUsage,
  Image,
  ImageSpec,
  Mount,
  MountPropagation,
  PodSandbox,
  PodSandboxMetadata,
  PodSandboxState,
  PodSandboxStatus,
  RuntimeConfiguration,
  RuntimeStatus,
  VersionInfo,
} from './types.js';
import type {
  WireContainer,
  WireContainerMetadata,
  WireContainerStatus,
  WireLinuxResources,
  WireEnum,
  WireExecSyncResponse,
  WireFilesystemUsage,
  WireImage,
  WireImageSpec,
  WireMount,
  WirePodSandbox,
  WirePodSandboxMetadata,
  WirePodSandboxStatus,
  WireRuntimeConfigResponse,
  WireStatusResponse,
  WireVersionResponse,
} from './wire.js';

const SANDBOX_STATES: readonly PodSandboxState[] = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
const CONTAINER_STATES: readonly ContainerState[] = [
  'CONTAINER_CREATED',
  'CONTAINER_RUNNING',
  'CONTAINER_EXITED',
  'CONTAINER_UNKNOWN',
];
const PROPAGATIONS: readonly MountPropagation[] = [
  'PROPAGATION_PRIVATE',
  'PROPAGATION_HOST_TO_CONTAINER',
  'PROPAGATION_BIDIRECTIONAL',
];

/** Maps a decoded enum onto a string union; a value our proto does not know becomes `fallback`. */
function enumFromWire<T extends string>(value: WireEnum, known: readonly T[], fallback: T): T {
  return known.find((k) => k === value) ?? fallback;
}

/** Parses an int64 decoded as a decimal string; an empty or malformed value is 0. */
export function bigintFromWire(value: string): bigint {
  return /^-?\d+$/.test(value) ? BigInt(value) : 0n;
}

/** Throws unless `id` is non-empty. */
export function requireId(method: string, what: string, id: string): string {
  if (id === '') throw new CriInvalidResponseError({ method, message: `runtime returned an empty ${what}` });
  return id;
}

function requireMessage<T>(method: string, what: string, value: T | null): T {
  if (value === null) throw new CriInvalidResponseError({ method, message: `runtime returned no ${what}` });
  return value;
}

export function versionFromWire(wire: WireVersionResponse): VersionInfo {
  return {
    version: wire.version,
    runtimeName: wire.runtimeName,
    runtimeVersion: wire.runtimeVersion,
    runtimeApiVersion: wire.runtimeApiVersion,
  };
}

const CGROUP_DRIVERS = { SYSTEMD: 'systemd', CGROUPFS: 'cgroupfs' } as const;

/**
 * The runtime's configuration. No `linux` part reads as SYSTEMD, the proto's default, as the
 * kubelet reads it (`GetLinux().GetCgroupDriver()`).
 */
export function runtimeConfigFromWire(wire: WireRuntimeConfigResponse): RuntimeConfiguration {
  const name = enumFromWire(wire.linux?.cgroupDriver ?? 'SYSTEMD', ['SYSTEMD', 'CGROUPFS'] as const, 'SYSTEMD');
  return { cgroupDriver: CGROUP_DRIVERS[name] };
}

export function runtimeStatusFromWire(method: string, wire: WireStatusResponse): RuntimeStatus {
  const status = requireMessage(method, 'status', wire.status);
  const features = wire.features;
  return {
    conditions: status.conditions.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
    handlers: wire.runtimeHandlers.map((h) => ({
      name: h.name,
      recursiveReadOnlyMounts: h.features?.recursiveReadOnlyMounts === true,
      userNamespaces: h.features?.userNamespaces === true,
    })),
    features: {
      supplementalGroupsPolicy: features?.supplementalGroupsPolicy === true,
      userNamespacesHostNetwork: features?.userNamespacesHostNetwork === true,
      mountOptions: features?.mountOptions === true,
    },
  };
}

function sandboxMetadataFromWire(method: string, wire: WirePodSandboxMetadata | null): PodSandboxMetadata {
  const m = requireMessage(method, 'sandbox metadata', wire);
  return { name: m.name, uid: m.uid, namespace: m.namespace, attempt: m.attempt };
}

export function podSandboxFromWire(method: string, wire: WirePodSandbox): PodSandbox {
  return {
    id: requireId(method, 'sandbox ID', wire.id),
    metadata: sandboxMetadataFromWire(method, wire.metadata),
    state: enumFromWire(wire.state, SANDBOX_STATES, 'SANDBOX_NOTREADY'),
    createdAt: bigintFromWire(wire.createdAt),
    labels: { ...wire.labels },
    annotations: { ...wire.annotations },
    runtimeHandler: wire.runtimeHandler,
  };
}

export function podSandboxStatusFromWire(method: string, wire: WirePodSandboxStatus | null): PodSandboxStatus {
  const s = requireMessage(method, 'sandbox status', wire);
  const network = s.network;
  return {
    id: requireId(method, 'sandbox ID', s.id),
    metadata: sandboxMetadataFromWire(method, s.metadata),
    state: enumFromWire(s.state, SANDBOX_STATES, 'SANDBOX_NOTREADY'),
    createdAt: bigintFromWire(s.createdAt),
    ...(network === null ? {} : { network: { ip: network.ip, additionalIps: network.additionalIps.map((p) => p.ip) } }),
    labels: { ...s.labels },
    annotations: { ...s.annotations },
    runtimeHandler: s.runtimeHandler,
  };
}

function containerMetadataFromWire(method: string, wire: WireContainerMetadata | null): ContainerMetadata {
  const m = requireMessage(method, 'container metadata', wire);
  return { name: m.name, attempt: m.attempt };
}

function imageSpecFromWire(wire: WireImageSpec | null): ImageSpec {
  if (wire === null) return { image: '' };
  return Object.keys(wire.annotations).length === 0
    ? { image: wire.image }
    : { image: wire.image, annotations: { ...wire.annotations } };
}

function mountFromWire(wire: WireMount): Mount {
  return {
    containerPath: wire.containerPath,
    hostPath: wire.hostPath,
    readonly: wire.readonly,
    selinuxRelabel: wire.selinuxRelabel,
    propagation: enumFromWire(wire.propagation, PROPAGATIONS, 'PROPAGATION_PRIVATE'),
    ...(wire.image === undefined || wire.image === null || wire.image.image === '' ? {} : { image: imageSpecFromWire(wire.image) }),
    ...(wire.imageSubPath === undefined || wire.imageSubPath === '' ? {} : { imageSubPath: wire.imageSubPath }),
  };
}

export function containerFromWire(method: string, wire: WireContainer): Container {
  return {
    id: requireId(method, 'container ID', wire.id),
    podSandboxId: wire.podSandboxId,
    metadata: containerMetadataFromWire(method, wire.metadata),
    image: imageSpecFromWire(wire.image),
    imageRef: wire.imageRef,
    state: enumFromWire(wire.state, CONTAINER_STATES, 'CONTAINER_UNKNOWN'),
    createdAt: bigintFromWire(wire.createdAt),
    labels: { ...wire.labels },
    annotations: { ...wire.annotations },
  };
}

export function containerStatusFromWire(method: string, wire: WireContainerStatus | null): ContainerStatus {
  const s = requireMessage(method, 'container status', wire);
  return {
    id: requireId(method, 'container ID', s.id),
    metadata: containerMetadataFromWire(method, s.metadata),
    state: enumFromWire(s.state, CONTAINER_STATES, 'CONTAINER_UNKNOWN'),
    createdAt: bigintFromWire(s.createdAt),
    startedAt: bigintFromWire(s.startedAt),
    finishedAt: bigintFromWire(s.finishedAt),
    exitCode: s.exitCode,
    image: imageSpecFromWire(s.image),
    imageRef: s.imageRef,
    reason: s.reason,
    message: s.message,
    labels: { ...s.labels },
    annotations: { ...s.annotations },
    mounts: s.mounts.map(mountFromWire),
    logPath: s.logPath,
    ...appliedResourcesFromWire(s.resources?.linux ?? null),
    ...processUserFromWire(s.user?.linux ?? null),
  };
}

/** The first process's user, when the runtime reports it. */
function processUserFromWire(linux: { uid: string; gid: string; supplementalGroups: string[] } | null): { user?: ContainerProcessUser } {
  if (linux === null) return {};
  return { user: { uid: bigintFromWire(linux.uid), gid: bigintFromWire(linux.gid), supplementalGroups: linux.supplementalGroups.map(bigintFromWire) } };
}

/** The runtime's applied cgroup values, when it reports them (a message without them is absent). */
function appliedResourcesFromWire(linux: WireLinuxResources | null): { resources?: AppliedLinuxResources } {
  if (linux === null) return {};
  return {
    resources: {
      cpuPeriod: bigintFromWire(linux.cpuPeriod),
      cpuQuota: bigintFromWire(linux.cpuQuota),
      cpuShares: bigintFromWire(linux.cpuShares),
      memoryLimitInBytes: bigintFromWire(linux.memoryLimitInBytes),
    },
  };
}

export function execSyncFromWire(wire: WireExecSyncResponse): ExecSyncResult {
  return { stdout: Buffer.from(wire.stdout), stderr: Buffer.from(wire.stderr), exitCode: wire.exitCode };
}

export function imageFromWire(method: string, wire: WireImage): Image {
  return {
    id: requireId(method, 'image ID', wire.id),
    repoTags: [...wire.repoTags],
    repoDigests: [...wire.repoDigests],
    size: bigintFromWire(wire.size),
    ...(wire.uid === null ? {} : { uid: bigintFromWire(wire.uid.value) }),
    username: wire.username,
    ...(wire.pinned ? { pinned: true } : {}),
  };
}

/** One image filesystem; a usage without a mountpoint is invalid (nothing could measure its capacity). */
export function filesystemUsageFromWire(method: string, wire: WireFilesystemUsage): FilesystemUsage {
  return {
    timestamp: bigintFromWire(wire.timestamp),
    mountpoint: requireId(method, 'filesystem mountpoint', wire.fsId?.mountpoint ?? ''),
    usedBytes: bigintFromWire(wire.usedBytes?.value ?? '0'),
    inodesUsed: bigintFromWire(wire.inodesUsed?.value ?? '0'),
  };
}
