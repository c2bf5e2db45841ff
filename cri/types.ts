/**
 * The Container Runtime Interface (CRI `runtime.v1`) as nodelet sees it: the subset of
 * `RuntimeService` and `ImageService` nodelet uses, as plain TypeScript data.
 *
 * Field names follow the upstream protobuf messages in camelCase; enums are string unions.
 * Timestamps the runtime reports in nanoseconds are exposed as `bigint` nanoseconds so nothing is
 * lost in conversion; helpers in `time.ts` convert them to `Date`.
 *
 * Contract shared by every method of both services:
 * - every call has a deadline (the adapter's default unless `CallOptions.timeoutMs` says otherwise);
 * - failures are thrown as the typed errors of `errors.ts` (`CriNotFoundError`,
 *   `CriUnavailableError`, `CriDeadlineError`, `CriInvalidResponseError`, `CriError`), never as raw
 *   gRPC errors;
 * - responses are validated: an empty ID where one is required is a `CriInvalidResponseError`.
 */

/** Per-call options. */
export interface CallOptions {
  /** Deadline for this call in milliseconds; the client's default when absent. */
  readonly timeoutMs?: number;
  /**
   * Cancels the call when aborted (the reconcile lost its queue lock, or the agent is shutting
   * down): the gRPC call is cancelled and the promise rejects with a `CriCancelledError`. An
   * already aborted signal rejects before anything is sent.
   */
  readonly signal?: AbortSignal;
}

export interface KeyValue {
  readonly key: string;
  readonly value: string;
}

export type Labels = Readonly<Record<string, string>>;

export interface VersionInfo {
  /** CRI API version, e.g. `0.1.0`. */
  readonly version: string;
  /** e.g. `containerd`. */
  readonly runtimeName: string;
  /** e.g. `1.6.20~ds1`. */
  readonly runtimeVersion: string;
  /** e.g. `v1`. */
  readonly runtimeApiVersion: string;
}

export interface RuntimeCondition {
  /** `RuntimeReady` or `NetworkReady` (or runtime-specific). */
  readonly type: string;
  readonly status: boolean;
  readonly reason: string;
  readonly message: string;
}

/** What one runtime handler can do (CRI `RuntimeHandler`; name "" is the default handler). */
export interface RuntimeHandlerInfo {
  readonly name: string;
  readonly recursiveReadOnlyMounts: boolean;
  readonly userNamespaces: boolean;
}

/** What the runtime as a whole implements (CRI `RuntimeFeatures`). */
export interface RuntimeWideFeatures {
  readonly supplementalGroupsPolicy: boolean;
  readonly userNamespacesHostNetwork: boolean;
  readonly mountOptions: boolean;
}

/** How the runtime manages cgroups (CRI RuntimeConfig): the driver the kubelet must use for pod cgroups. */
export type CgroupDriver = 'systemd' | 'cgroupfs';

/** The runtime's configuration the kubelet adopts (CRI RuntimeConfig). */
export interface RuntimeConfiguration {
  readonly cgroupDriver: CgroupDriver;
}

/**
 * The runtime's configuration, for runtimes that report it (containerd 2; older ones answer
 * UNIMPLEMENTED, thrown as a `CriError`).
 */
export interface RuntimeConfigReader {
  runtimeConfig(options?: CallOptions): Promise<RuntimeConfiguration>;
}

/** Checkpoints running containers (CRI CheckpointContainer: CRIU through the runtime). */
export interface ContainerCheckpointer {
  /**
   * Writes the container's checkpoint archive to `location` on the host. `timeoutSeconds` above 0
   * bounds the call (and the runtime's work); else the client's default deadline applies.
   */
  checkpointContainer(request: { readonly containerId: string; readonly location: string; readonly timeoutSeconds?: number }, options?: CallOptions): Promise<void>;
}

export interface RuntimeStatus {
  readonly conditions: readonly RuntimeCondition[];
  /** Empty from a runtime older than the field (containerd 1.6): then no handler has any feature. */
  readonly handlers: readonly RuntimeHandlerInfo[];
  readonly features: RuntimeWideFeatures;
}

export interface PodSandboxMetadata {
  readonly name: string;
  readonly uid: string;
  readonly namespace: string;
  readonly attempt: number;
}

export interface DnsConfig {
  readonly servers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

export interface PortMapping {
  readonly protocol: 'TCP' | 'UDP' | 'SCTP';
  readonly containerPort: number;
  readonly hostPort: number;
  readonly hostIp: string;
}

export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

export interface NamespaceOptions {
  readonly network: NamespaceMode;
  readonly pid: NamespaceMode;
  readonly ipc: NamespaceMode;
  /** The container whose namespace a `TARGET` mode joins (an ephemeral container's `targetContainerName`). */
  readonly targetId?: string;
  /** The user namespace (CRI `userns_options`): `NODE`, or `POD` with the pod's mappings; absent, the runtime's default (the host's). */
  readonly userNamespace?: UserNamespace;
}

/** One range of IDs mapped into a user namespace: `length` IDs from `containerId` inside are `hostId`… outside. */
export interface IdMapping {
  readonly hostId: number;
  readonly containerId: number;
  readonly length: number;
}

/** A pod's user namespace (CRI `UserNamespace`): mappings only with mode `POD`. */
export interface UserNamespace {
  readonly mode: 'NODE' | 'POD';
  readonly uids: readonly IdMapping[];
  readonly gids: readonly IdMapping[];
}

/** A seccomp or AppArmor profile (CRI `SecurityProfile`). */
export interface SecurityProfile {
  readonly profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  /** Localhost only: an absolute path for seccomp, a profile name for AppArmor. */
  readonly localhostRef?: string;
}

/** SELinux labels (CRI `SELinuxOption`); empty fields are left to the runtime's defaults. */
export interface SELinuxOption {
  readonly user: string;
  readonly role: string;
  readonly type: string;
  readonly level: string;
}

export interface LinuxSandboxSecurityContext {
  readonly namespaceOptions?: NamespaceOptions;
  readonly selinuxOptions?: SELinuxOption;
  /** True when any container of the pod is privileged: containerd refuses a privileged container otherwise. */
  readonly privileged?: boolean;
  readonly runAsUser?: bigint;
  readonly runAsGroup?: bigint;
  readonly supplementalGroups?: readonly bigint[];
  /** `Strict`: only these groups, none from the image's /etc/group; absent: Merge. */
  readonly supplementalGroupsPolicy?: 'Merge' | 'Strict';
  readonly readonlyRootfs?: boolean;
  readonly seccomp?: SecurityProfile;
  readonly apparmor?: SecurityProfile;
}

export interface LinuxPodSandboxConfig {
  /** Parent cgroup of the sandbox (cgroupfs driver: a path such as `/nodelet/pod<uid>`). */
  readonly cgroupParent?: string;
  readonly securityContext?: LinuxSandboxSecurityContext;
  readonly sysctls?: Readonly<Record<string, string>>;
}

export interface PodSandboxConfig {
  readonly metadata: PodSandboxMetadata;
  readonly hostname: string;
  /** Directory where the runtime writes container logs: `/var/log/pods/<ns>_<name>_<uid>`. */
  readonly logDirectory: string;
  readonly dnsConfig?: DnsConfig;
  readonly portMappings?: readonly PortMapping[];
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly linux?: LinuxPodSandboxConfig;
}

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandbox {
  readonly id: string;
  readonly metadata: PodSandboxMetadata;
  readonly state: PodSandboxState;
  /** Nanoseconds since the epoch. */
  readonly createdAt: bigint;
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly runtimeHandler: string;
}

export interface PodSandboxNetworkStatus {
  /** Primary IP; empty for host-network sandboxes. */
  readonly ip: string;
  readonly additionalIps: readonly string[];
}

export interface PodSandboxStatus {
  readonly id: string;
  readonly metadata: PodSandboxMetadata;
  readonly state: PodSandboxState;
  readonly createdAt: bigint;
  readonly network?: PodSandboxNetworkStatus;
  readonly labels: Labels;
  readonly annotations: Labels;
  /** The handler the sandbox runs with ('' for the runtime's default). */
  readonly runtimeHandler: string;
}

export interface PodSandboxFilter {
  readonly id?: string;
  readonly state?: PodSandboxState;
  /** Every pair must match. */
  readonly labelSelector?: Labels;
}

export interface ContainerMetadata {
  readonly name: string;
  readonly attempt: number;
}

export interface ImageSpec {
  readonly image: string;
  readonly annotations?: Labels;
  /** The reference as the pod wrote it, when `image` is the resolved one (image volumes). */
  readonly userSpecifiedImage?: string;
  /** The runtime handler the image is for (image volumes: the pod's). */
  readonly runtimeHandler?: string;
}

export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Mount {
  readonly containerPath: string;
  readonly hostPath: string;
  readonly readonly?: boolean;
  readonly selinuxRelabel?: boolean;
  readonly propagation?: MountPropagation;
  /** Read-only submounts too (`recursiveReadOnly` resolved to on); only with `readonly` and private propagation. */
  readonly recursiveReadOnly?: boolean;
  /** An idmapped mount's mappings: the pod's user namespace's, so its files keep their host owners (hostUsers: false). */
  readonly uidMappings?: readonly IdMapping[];
  readonly gidMappings?: readonly IdMapping[];
  /** An image volume: the runtime mounts this image (then `hostPath` is empty and `readonly` set). */
  readonly image?: ImageSpec;
  /** The image's directory to mount instead of its root (the mount's subPath). */
  readonly imageSubPath?: string;
}

/** A host device node in the container (CRI `Device`). */
export interface DeviceMapping {
  readonly containerPath: string;
  readonly hostPath: string;
  /** cgroup permissions: `r`, `w`, `m` or a combination. */
  readonly permissions: string;
}

export interface LinuxContainerResources {
  readonly cpuPeriod?: bigint;
  readonly cpuQuota?: bigint;
  readonly cpuShares?: bigint;
  readonly memoryLimitInBytes?: bigint;
  readonly oomScoreAdj?: bigint;
}

export interface LinuxContainerSecurityContext {
  readonly privileged?: boolean;
  readonly namespaceOptions?: NamespaceOptions;
  readonly selinuxOptions?: SELinuxOption;
  readonly runAsUser?: bigint;
  /** The image's non-numeric user, sent when nothing sets a numeric one. */
  readonly runAsUsername?: string;
  readonly runAsGroup?: bigint;
  readonly supplementalGroups?: readonly bigint[];
  /** `Strict`: only these groups, none from the image's /etc/group; absent: Merge. */
  readonly supplementalGroupsPolicy?: 'Merge' | 'Strict';
  readonly readonlyRootfs?: boolean;
  readonly noNewPrivs?: boolean;
  readonly capabilities?: { readonly addCapabilities: readonly string[]; readonly dropCapabilities: readonly string[] };
  /** Paths masked in the container; they replace the runtime's defaults (empty: none). */
  readonly maskedPaths?: readonly string[];
  /** Paths mounted read-only in the container; they replace the runtime's defaults (empty: none). */
  readonly readonlyPaths?: readonly string[];
  readonly seccomp?: SecurityProfile;
  readonly apparmor?: SecurityProfile;
  /** The same AppArmor profile in the deprecated string form (`runtime/default`, `localhost/<name>`). */
  readonly apparmorProfile?: string;
}

export interface LinuxContainerConfig {
  readonly resources?: LinuxContainerResources;
  readonly securityContext?: LinuxContainerSecurityContext;
}

export interface ContainerConfig {
  readonly metadata: ContainerMetadata;
  readonly image: ImageSpec;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly workingDir: string;
  readonly envs: readonly KeyValue[];
  readonly mounts: readonly Mount[];
  /** Host device nodes (device plugins' allocations); none when absent. */
  readonly devices?: readonly DeviceMapping[];
  /** Fully qualified CDI device names the runtime resolves (CRI `CDI_devices`); none when absent. */
  readonly cdiDevices?: readonly string[];
  readonly labels: Labels;
  readonly annotations: Labels;
  /** Relative to the sandbox's `logDirectory`: `<container>/<restartCount>.log`. */
  readonly logPath: string;
  readonly stdin: boolean;
  readonly stdinOnce: boolean;
  readonly tty: boolean;
  readonly linux?: LinuxContainerConfig;
}

export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface Container {
  readonly id: string;
  readonly podSandboxId: string;
  readonly metadata: ContainerMetadata;
  readonly image: ImageSpec;
  /** Image reference (digest or ID) the container runs. */
  readonly imageRef: string;
  readonly state: ContainerState;
  readonly createdAt: bigint;
  readonly labels: Labels;
  readonly annotations: Labels;
}

export interface ContainerStatus {
  readonly id: string;
  readonly metadata: ContainerMetadata;
  readonly state: ContainerState;
  /** Nanoseconds since the epoch; 0 when not applicable. */
  readonly createdAt: bigint;
  readonly startedAt: bigint;
  readonly finishedAt: bigint;
  readonly exitCode: number;
  readonly image: ImageSpec;
  readonly imageRef: string;
  /** Brief reason, e.g. `Completed`, `Error`, `OOMKilled`. */
  readonly reason: string;
  readonly message: string;
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly mounts: readonly Mount[];
  /** Absolute path of the container's log file. */
  readonly logPath: string;
  /** The cgroup values the runtime applies now; undefined when the runtime does not report them. */
  readonly resources?: AppliedLinuxResources;
  /** The first process's identity; undefined when the runtime does not report it (containerd 1.6). */
  readonly user?: ContainerProcessUser;
}

/** The identity a container's first process started with (CRI `LinuxContainerUser`). */
export interface ContainerProcessUser {
  readonly uid: bigint;
  readonly gid: bigint;
  readonly supplementalGroups: readonly bigint[];
}

/** The cgroup values a runtime reports as applied to a running container (ContainerStatus). */
export interface AppliedLinuxResources {
  readonly cpuPeriod: bigint;
  readonly cpuQuota: bigint;
  readonly cpuShares: bigint;
  readonly memoryLimitInBytes: bigint;
}

export interface ContainerFilter {
  readonly id?: string;
  readonly state?: ContainerState;
  readonly podSandboxId?: string;
  readonly labelSelector?: Labels;
}

export interface ExecSyncResult {
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly exitCode: number;
}

/** Which of the standard streams an exec or attach session carries, and whether it is a terminal. */
export interface StreamOptions {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

/**
 * The runtime's streaming endpoints (CRI `Exec`, `Attach`, `PortForward`). Each call only prepares
 * a session: it returns a one-time URL of the runtime's own streaming server, valid for a short
 * while (a minute in containerd), that the caller's client connects to with an HTTP upgrade.
 * Kept apart from `RuntimeService` so that runtime doubles without streaming need not grow.
 */
export interface StreamingRuntime {
  /** @throws CriNotFoundError when no such container exists. */
  exec(containerId: string, cmd: readonly string[], streams: StreamOptions, options?: CallOptions): Promise<string>;
  /** Attaches to the container's main process; `streams.tty` must match the container's config. */
  attach(containerId: string, streams: StreamOptions, options?: CallOptions): Promise<string>;
  /** Ports may be empty: a SPDY client names each port in its stream headers. */
  portForward(podSandboxId: string, ports: readonly number[], options?: CallOptions): Promise<string>;
}

/**
 * The runtime's side of container log rotation (CRI `ReopenContainerLog`): after the log file was
 * renamed away, the runtime opens `log_path` again, creating a fresh file. Kept apart from
 * `RuntimeService` like {@link StreamingRuntime}, so runtime doubles without rotation need not grow.
 */
export interface ContainerLogRuntime {
  /** @throws CriError when the runtime refuses (containerd: the container is not running); then no new file is made. */
  reopenContainerLog(containerId: string, options?: CallOptions): Promise<void>;
}

/** Credentials for one image pull (CRI `AuthConfig`). */
export interface AuthConfig {
  readonly username?: string;
  readonly password?: string;
  readonly auth?: string;
  readonly serverAddress?: string;
  readonly identityToken?: string;
  readonly registryToken?: string;
}

export interface Image {
  readonly id: string;
  readonly repoTags: readonly string[];
  readonly repoDigests: readonly string[];
  readonly size: bigint;
  /** The image's numeric user (`USER 1000`); absent when it names a user or none. */
  readonly uid?: bigint;
  /** The image's non-numeric user (`USER nobody`); empty when numeric or none. */
  readonly username?: string;
  /** The runtime asks that the image never be garbage collected (containerd 1.7+: its sandbox image). */
  readonly pinned?: boolean;
}

/** One filesystem the runtime stores images on (CRI `FilesystemUsage`). */
export interface FilesystemUsage {
  /** Nanoseconds since the epoch when the figures were taken. */
  readonly timestamp: bigint;
  /** Where the filesystem is mounted on the host (its capacity is the host's `statfs` of it). */
  readonly mountpoint: string;
  /** Bytes the runtime's image layers take on it (not the filesystem's whole usage). */
  readonly usedBytes: bigint;
  readonly inodesUsed: bigint;
}

/** CPU figures of a container (CRI `CpuUsage`); absent values are `undefined`, never 0. */
export interface CpuUsage {
  /** Nanoseconds since the epoch when the figures were taken. */
  readonly timestamp: bigint;
  readonly usageCoreNanoSeconds: bigint | undefined;
  /** Only some runtimes fill this in; the kubelet computes it from two samples when absent. */
  readonly usageNanoCores: bigint | undefined;
}

/** Memory figures of a container (CRI `MemoryUsage`). */
export interface MemoryUsage {
  readonly timestamp: bigint;
  readonly workingSetBytes: bigint | undefined;
  readonly availableBytes: bigint | undefined;
  readonly usageBytes: bigint | undefined;
  readonly rssBytes: bigint | undefined;
  readonly pageFaults: bigint | undefined;
  readonly majorPageFaults: bigint | undefined;
}

/** One container's figures from `ListContainerStats`. */
export interface ContainerStats {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly cpu: CpuUsage | undefined;
  readonly memory: MemoryUsage | undefined;
  /** The container's writable layer; `mountpoint` may be empty (runtimes do not always say). */
  readonly writableLayer: { readonly timestamp: bigint; readonly mountpoint: string; readonly usedBytes: bigint | undefined; readonly inodesUsed: bigint | undefined } | undefined;
  /** Swap use, when the runtime reports it; `availableBytes` is the limit less the usage. */
  readonly swap?: { readonly timestamp: bigint; readonly availableBytes: bigint | undefined; readonly usageBytes: bigint | undefined } | undefined;
}

/** The runtime's container statistics (`ListContainerStats`), for the node server's stats. */
export interface StatsRuntime {
  /** Figures of every container the runtime has (running or not; the caller filters). */
  listContainerStats(options?: CallOptions): Promise<ContainerStats[]>;
}

/**
 * The runtime side of the CRI. Every method is safe to call again after a failure; the notes on
 * each say what "again" means for it.
 */
export interface RuntimeService {
  /** Runtime name and versions; nodelet calls it at start-up to check the runtime answers. */
  version(options?: CallOptions): Promise<VersionInfo>;
  /** Runtime and network readiness conditions. */
  status(options?: CallOptions): Promise<RuntimeStatus>;

  /**
   * Creates and starts a sandbox (network namespace, pause container, CNI).
   * Not idempotent: each call makes a new sandbox; callers look for an existing one first.
   * @returns the sandbox ID (never empty).
   */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, options?: CallOptions): Promise<string>;
  /** Stops every container of the sandbox and tears down its network. Idempotent; a missing sandbox is not an error. */
  stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  /** Removes a sandbox and its containers. Idempotent; a missing sandbox is not an error. */
  removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void>;
  /** @throws CriNotFoundError when no such sandbox exists. */
  podSandboxStatus(podSandboxId: string, options?: CallOptions): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: PodSandboxFilter, options?: CallOptions): Promise<PodSandbox[]>;

  /**
   * Creates (does not start) a container in a sandbox. `sandboxConfig` is the config the sandbox
   * was created with; it is always sent (containerd 1.6 dereferences it unconditionally).
   * @returns the container ID (never empty).
   */
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    options?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, options?: CallOptions): Promise<void>;
  /**
   * Sends the stop signal, waits `timeoutSeconds`, then kills. Idempotent on an exited container.
   * The call's deadline is extended by `timeoutSeconds` so the runtime can wait it out.
   */
  stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void>;
  /** Removes a container. Idempotent; a missing container is not an error. */
  removeContainer(containerId: string, options?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, options?: CallOptions): Promise<Container[]>;
  /** @throws CriNotFoundError when no such container exists. */
  containerStatus(containerId: string, options?: CallOptions): Promise<ContainerStatus>;
  /**
   * Applies new cgroup values to a container (in-place resize). Idempotent: the same values again
   * change nothing. Zero fields are left as they are by containerd (a limit cannot be removed).
   * @throws CriNotFoundError when no such container exists.
   */
  updateContainerResources(containerId: string, resources: LinuxContainerResources, options?: CallOptions): Promise<void>;
  /** Runs a command in a running container and waits for it (probes, exec hooks). */
  execSync(containerId: string, cmd: readonly string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult>;
}

/** The image side of the CRI. */
export interface ImageService {
  /** @returns the image, or `undefined` when the runtime does not have it. */
  imageStatus(image: ImageSpec, options?: CallOptions): Promise<Image | undefined>;
  /**
   * Pulls an image. Idempotent (pulling a present image refreshes it).
   * @returns the image reference (never empty).
   */
  pullImage(image: ImageSpec, auth?: AuthConfig, sandboxConfig?: PodSandboxConfig, options?: CallOptions): Promise<string>;
  listImages(options?: CallOptions): Promise<Image[]>;
  /** Idempotent; a missing image is not an error. */
  removeImage(image: ImageSpec, options?: CallOptions): Promise<void>;
  /** The filesystems holding images (containerd: one, its snapshotter's directory). */
  imageFsInfo(options?: CallOptions): Promise<FilesystemUsage[]>;
}
