/**
 * `types.ts` → wire: builds the request messages the gRPC adapter sends. Pure functions.
 * bigint becomes a decimal string (protobufjs parses it into an int64 without precision loss);
 * optional sub-messages are sent only when the caller gave them, so the runtime's defaults apply.
 */
import type {
  AuthConfig,
  ContainerConfig,
  ContainerFilter,
  ImageSpec,
  LinuxContainerConfig,
  LinuxContainerResources,
  LinuxContainerSecurityContext,
  LinuxPodSandboxConfig,
  LinuxSandboxSecurityContext,
  Mount,
  NamespaceOptions,
  PodSandboxConfig,
  PodSandboxFilter,
  SecurityProfile,
  SELinuxOption,
} from './types.js';
import type {
  WireAuthConfigRequest,
  WireContainerConfigRequest,
  WireContainerFilterRequest,
  WireImageSpecRequest,
  WireInt64Value,
  WireLinuxContainerResources,
  WireLinuxContainerSecurityContext,
  WireLinuxPodSandboxConfig,
  WireLinuxSandboxSecurityContext,
  WireMountRequest,
  WireNamespaceOption,
  WirePodSandboxConfigRequest,
  WirePodSandboxFilterRequest,
  WireSecurityProfile,
  WireSELinuxOption,
} from './wire-request.js';

function int64(value: bigint | undefined): string | undefined {
  return value === undefined ? undefined : value.toString();
}

function int64Value(value: bigint | undefined): WireInt64Value | undefined {
  return value === undefined ? undefined : { value: value.toString() };
}

function int64List(values: readonly bigint[] | undefined): string[] | undefined {
  return values?.map((v) => v.toString());
}

function namespaceOptionToWire(options: NamespaceOptions | undefined): WireNamespaceOption | undefined {
  if (options === undefined) return undefined;
  const userns = options.userNamespace;
  return {
    network: options.network,
    pid: options.pid,
    ipc: options.ipc,
    ...(options.targetId === undefined ? {} : { targetId: options.targetId }),
    ...(userns === undefined ? {} : { usernsOptions: { mode: userns.mode, uids: userns.uids.map((m) => ({ ...m })), gids: userns.gids.map((m) => ({ ...m })) } }),
  };
}

function securityProfileToWire(profile: SecurityProfile | undefined): WireSecurityProfile | undefined {
  if (profile === undefined) return undefined;
  return { profileType: profile.profileType, ...(profile.localhostRef === undefined ? {} : { localhostRef: profile.localhostRef }) };
}

function selinuxToWire(options: SELinuxOption | undefined): WireSELinuxOption | undefined {
  return options === undefined ? undefined : { user: options.user, role: options.role, type: options.type, level: options.level };
}

function sandboxSecurityToWire(sc: LinuxSandboxSecurityContext | undefined): WireLinuxSandboxSecurityContext | undefined {
  if (sc === undefined) return undefined;
  return {
    namespaceOptions: namespaceOptionToWire(sc.namespaceOptions),
    selinuxOptions: selinuxToWire(sc.selinuxOptions),
    privileged: sc.privileged,
    runAsUser: int64Value(sc.runAsUser),
    runAsGroup: int64Value(sc.runAsGroup),
    supplementalGroups: int64List(sc.supplementalGroups),
    ...(sc.supplementalGroupsPolicy === undefined ? {} : { supplementalGroupsPolicy: sc.supplementalGroupsPolicy }),
    readonlyRootfs: sc.readonlyRootfs,
    seccomp: securityProfileToWire(sc.seccomp),
    apparmor: securityProfileToWire(sc.apparmor),
  };
}

function linuxSandboxToWire(linux: LinuxPodSandboxConfig | undefined): WireLinuxPodSandboxConfig | undefined {
  if (linux === undefined) return undefined;
  return {
    cgroupParent: linux.cgroupParent,
    securityContext: sandboxSecurityToWire(linux.securityContext),
    sysctls: linux.sysctls === undefined ? undefined : { ...linux.sysctls },
  };
}

/** The wire form of a sandbox config (RunPodSandbox, and the `sandbox_config` of CreateContainer/PullImage). */
export function podSandboxConfigToWire(config: PodSandboxConfig): WirePodSandboxConfigRequest {
  const { metadata, dnsConfig } = config;
  return {
    metadata: { name: metadata.name, uid: metadata.uid, namespace: metadata.namespace, attempt: metadata.attempt },
    hostname: config.hostname,
    logDirectory: config.logDirectory,
    dnsConfig:
      dnsConfig === undefined
        ? undefined
        : { servers: [...dnsConfig.servers], searches: [...dnsConfig.searches], options: [...dnsConfig.options] },
    portMappings: (config.portMappings ?? []).map((p) => ({
      protocol: p.protocol,
      containerPort: p.containerPort,
      hostPort: p.hostPort,
      hostIp: p.hostIp,
    })),
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    linux: linuxSandboxToWire(config.linux),
  };
}

/** The wire form of an image reference. */
export function imageSpecToWire(spec: ImageSpec): WireImageSpecRequest {
  return {
    image: spec.image,
    annotations: { ...spec.annotations },
    ...(spec.userSpecifiedImage === undefined ? {} : { userSpecifiedImage: spec.userSpecifiedImage }),
    ...(spec.runtimeHandler === undefined ? {} : { runtimeHandler: spec.runtimeHandler }),
  };
}

function mountToWire(mount: Mount): WireMountRequest {
  return {
    containerPath: mount.containerPath,
    hostPath: mount.hostPath,
    readonly: mount.readonly ?? false,
    selinuxRelabel: mount.selinuxRelabel ?? false,
    propagation: mount.propagation ?? 'PROPAGATION_PRIVATE',
    ...(mount.recursiveReadOnly === true ? { recursiveReadOnly: true } : {}),
    ...(mount.uidMappings === undefined ? {} : { uidMappings: mount.uidMappings.map((m) => ({ ...m })) }),
    ...(mount.gidMappings === undefined ? {} : { gidMappings: mount.gidMappings.map((m) => ({ ...m })) }),
    ...(mount.image === undefined ? {} : { image: imageSpecToWire(mount.image) }),
    ...(mount.imageSubPath === undefined || mount.imageSubPath === '' ? {} : { imageSubPath: mount.imageSubPath }),
  };
}

function containerSecurityToWire(
  sc: LinuxContainerSecurityContext | undefined,
): WireLinuxContainerSecurityContext | undefined {
  if (sc === undefined) return undefined;
  const caps = sc.capabilities;
  return {
    capabilities:
      caps === undefined
        ? undefined
        : { addCapabilities: [...caps.addCapabilities], dropCapabilities: [...caps.dropCapabilities] },
    privileged: sc.privileged,
    namespaceOptions: namespaceOptionToWire(sc.namespaceOptions),
    selinuxOptions: selinuxToWire(sc.selinuxOptions),
    runAsUser: int64Value(sc.runAsUser),
    runAsUsername: sc.runAsUsername,
    runAsGroup: int64Value(sc.runAsGroup),
    supplementalGroups: int64List(sc.supplementalGroups),
    ...(sc.supplementalGroupsPolicy === undefined ? {} : { supplementalGroupsPolicy: sc.supplementalGroupsPolicy }),
    readonlyRootfs: sc.readonlyRootfs,
    noNewPrivs: sc.noNewPrivs,
    maskedPaths: sc.maskedPaths === undefined ? undefined : [...sc.maskedPaths],
    readonlyPaths: sc.readonlyPaths === undefined ? undefined : [...sc.readonlyPaths],
    seccomp: securityProfileToWire(sc.seccomp),
    apparmor: securityProfileToWire(sc.apparmor),
    apparmorProfile: sc.apparmorProfile,
  };
}

function linuxContainerToWire(linux: LinuxContainerConfig | undefined): WireContainerConfigRequest['linux'] {
  if (linux === undefined) return undefined;
  return {
    resources: linux.resources === undefined ? undefined : linuxResourcesToWire(linux.resources),
    securityContext: containerSecurityToWire(linux.securityContext),
  };
}

/** The wire form of a container's cgroup values (CreateContainer, UpdateContainerResources). */
export function linuxResourcesToWire(r: LinuxContainerResources): WireLinuxContainerResources {
  return {
    cpuPeriod: int64(r.cpuPeriod),
    cpuQuota: int64(r.cpuQuota),
    cpuShares: int64(r.cpuShares),
    memoryLimitInBytes: int64(r.memoryLimitInBytes),
    oomScoreAdj: int64(r.oomScoreAdj),
  };
}

/** The wire form of a container config (CreateContainer). */
export function containerConfigToWire(config: ContainerConfig): WireContainerConfigRequest {
  return {
    metadata: { name: config.metadata.name, attempt: config.metadata.attempt },
    image: imageSpecToWire(config.image),
    command: [...config.command],
    args: [...config.args],
    workingDir: config.workingDir,
    envs: config.envs.map((e) => ({ key: e.key, value: e.value })),
    mounts: config.mounts.map(mountToWire),
    devices: (config.devices ?? []).map((d) => ({ containerPath: d.containerPath, hostPath: d.hostPath, permissions: d.permissions })),
    CDIDevices: (config.cdiDevices ?? []).map((name) => ({ name })),
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    logPath: config.logPath,
    stdin: config.stdin,
    stdinOnce: config.stdinOnce,
    tty: config.tty,
    linux: linuxContainerToWire(config.linux),
  };
}

/**
 * The wire form of a sandbox filter. The state goes in a wrapper message so that "any state" (no
 * wrapper) differs from SANDBOX_READY, whose enum value is the proto default 0.
 */
export function podSandboxFilterToWire(filter: PodSandboxFilter | undefined): WirePodSandboxFilterRequest | undefined {
  if (filter === undefined) return undefined;
  return {
    id: filter.id,
    state: filter.state === undefined ? undefined : { state: filter.state },
    labelSelector: filter.labelSelector === undefined ? undefined : { ...filter.labelSelector },
  };
}

/** The wire form of a container filter; see `podSandboxFilterToWire` for why the state is wrapped. */
export function containerFilterToWire(filter: ContainerFilter | undefined): WireContainerFilterRequest | undefined {
  if (filter === undefined) return undefined;
  return {
    id: filter.id,
    state: filter.state === undefined ? undefined : { state: filter.state },
    podSandboxId: filter.podSandboxId,
    labelSelector: filter.labelSelector === undefined ? undefined : { ...filter.labelSelector },
  };
}

/** The wire form of registry credentials. */
export function authConfigToWire(auth: AuthConfig | undefined): WireAuthConfigRequest | undefined {
  if (auth === undefined) return undefined;
  return {
    username: auth.username,
    password: auth.password,
    auth: auth.auth,
    serverAddress: auth.serverAddress,
    identityToken: auth.identityToken,
    registryToken: auth.registryToken,
  };
}
