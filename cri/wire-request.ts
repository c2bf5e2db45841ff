/**
 * The shapes of CRI request messages as handed to @grpc/proto-loader's serializer (protobufjs
 * `fromObject`): camelCase field names, int64 as decimal strings, enums by name.
 *
 * They exist because `fromObject` silently drops keys it does not know: declaring every field we
 * send lets the compiler catch a misspelt one. Field names mirror `api.proto`.
 */

type WireMap = Record<string, string>;

export interface WireInt64Value {
  value: string;
}

export interface WireIdMapping {
  hostId: number;
  containerId: number;
  length: number;
}

export interface WireUserNamespace {
  mode: string;
  uids: WireIdMapping[];
  gids: WireIdMapping[];
}

export interface WireNamespaceOption {
  network: string;
  pid: string;
  ipc: string;
  targetId?: string;
  usernsOptions?: WireUserNamespace;
}

export interface WireSecurityProfile {
  profileType: string;
  localhostRef?: string;
}

export interface WireSELinuxOption {
  user: string;
  role: string;
  type: string;
  level: string;
}

export interface WireLinuxSandboxSecurityContext {
  namespaceOptions?: WireNamespaceOption;
  selinuxOptions?: WireSELinuxOption;
  privileged?: boolean;
  runAsUser?: WireInt64Value;
  runAsGroup?: WireInt64Value;
  supplementalGroups?: string[];
  supplementalGroupsPolicy?: string;
  readonlyRootfs?: boolean;
  seccomp?: WireSecurityProfile;
  apparmor?: WireSecurityProfile;
}

export interface WireLinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: WireLinuxSandboxSecurityContext;
  sysctls?: WireMap;
}

export interface WirePortMapping {
  protocol: string;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

export interface WirePodSandboxConfigRequest {
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  hostname: string;
  logDirectory: string;
  dnsConfig?: { servers: string[]; searches: string[]; options: string[] };
  portMappings: WirePortMapping[];
  labels: WireMap;
  annotations: WireMap;
  linux?: WireLinuxPodSandboxConfig;
}

export interface WireImageSpecRequest {
  image: string;
  annotations: WireMap;
  userSpecifiedImage?: string;
  runtimeHandler?: string;
}

export interface WireMountRequest {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  selinuxRelabel: boolean;
  propagation: string;
  recursiveReadOnly?: boolean;
  uidMappings?: WireIdMapping[];
  gidMappings?: WireIdMapping[];
  image?: WireImageSpecRequest;
  imageSubPath?: string;
}

export interface WireLinuxContainerResources {
  cpuPeriod?: string;
  cpuQuota?: string;
  cpuShares?: string;
  memoryLimitInBytes?: string;
  oomScoreAdj?: string;
}

export interface WireLinuxContainerSecurityContext {
  capabilities?: { addCapabilities: string[]; dropCapabilities: string[] };
  privileged?: boolean;
  namespaceOptions?: WireNamespaceOption;
  selinuxOptions?: WireSELinuxOption;
  runAsUser?: WireInt64Value;
  runAsUsername?: string;
  runAsGroup?: WireInt64Value;
  supplementalGroups?: string[];
  supplementalGroupsPolicy?: string;
  readonlyRootfs?: boolean;
  noNewPrivs?: boolean;
  maskedPaths?: string[];
  readonlyPaths?: string[];
  seccomp?: WireSecurityProfile;
  apparmor?: WireSecurityProfile;
  apparmorProfile?: string;
}

export interface WireContainerConfigRequest {
  metadata: { name: string; attempt: number };
  image: WireImageSpecRequest;
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: WireMountRequest[];
  devices: { containerPath: string; hostPath: string; permissions: string }[];
  /** proto-loader's name of `CDI_devices`. */
  CDIDevices: { name: string }[];
  labels: WireMap;
  annotations: WireMap;
  logPath: string;
  stdin: boolean;
  stdinOnce: boolean;
  tty: boolean;
  linux?: { resources?: WireLinuxContainerResources; securityContext?: WireLinuxContainerSecurityContext };
}

export interface WirePodSandboxFilterRequest {
  id?: string;
  state?: { state: string };
  labelSelector?: WireMap;
}

export interface WireContainerFilterRequest {
  id?: string;
  state?: { state: string };
  podSandboxId?: string;
  labelSelector?: WireMap;
}

export interface WireAuthConfigRequest {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}
