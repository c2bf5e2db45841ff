/**
 * The CRI container config of one spec container: image, command and args (the image's own
 * entrypoint when the spec gives none), env, mounts, the kubelet's log path
 * (`<name>/<restartCount>.log` under the sandbox's log directory), cgroup limits and the OOM score
 * adjustment by QoS (`oom-score.ts`), and the annotations a restarted
 * agent needs to recognise the container (restart count, spec hash, termination settings).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig, KeyValue, LinuxContainerConfig, Mount, NamespaceOptions, UserNamespace } from '../../cri/types.js';
import { hashContainerSpec } from '../model/container-hash.js';
import { expandCommand } from './container-env.js';
import { containerOomScoreAdj } from './oom-score.js';
import { parseMilliCpu, parseQuantity } from '../model/quantity.js';
import { ANNOTATION_RESOURCES, resourcesAnnotation } from '../model/resource-values.js';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_CONTAINER_KIND,
  ANNOTATION_CONTAINER_PORTS,
  ANNOTATION_GRACE_PERIOD,
  ANNOTATION_PRE_STOP_HANDLER,
  ANNOTATION_RESTART_COUNT,
  ANNOTATION_TERMINATION_MESSAGE_PATH,
  ANNOTATION_TERMINATION_MESSAGE_POLICY,
  containerLabels,
} from '../model/runtime-labels.js';
import { podGracePeriodSeconds, podIdentity, podNamespaces } from './sandbox-config.js';
import { containerSecurityContext, type ContainerSecuritySettings, type ImageUser } from './security-context.js';
import type { DeviceRunOptions } from '../devices/types.js';

export interface ContainerConfigOptions {
  readonly pod: V1Pod;
  readonly container: V1Container;
  readonly kind: 'init' | 'regular' | 'ephemeral';
  readonly nodeName: string;
  readonly restartCount: number;
  /** The image reference the runtime resolved (what was pulled or found). */
  readonly imageRef: string;
  readonly env: readonly KeyValue[];
  readonly mounts: readonly Mount[];
  /** The node's security settings (seccomp root and default, masked paths). */
  readonly security: ContainerSecuritySettings;
  /** The user the image runs as (ImageStatus), sent when the spec sets no runAsUser. */
  readonly imageUser: ImageUser;
  /** The node's memory: Burstable containers' `oom_score_adj` is their request's share of it. */
  readonly memoryCapacityBytes: number;
  /** The container's namespaces when not the pod's (an ephemeral container joins its target's processes). */
  readonly namespaces?: NamespaceOptions;
  /** What its device plugins' allocations add (`devices/`): envs and mounts before the container's own, device nodes, annotations, CDI devices. */
  readonly devices?: DeviceRunOptions;
}

const CPU_PERIOD_US = 100_000n;
const MIN_SHARES = 2n;

/** cgroup settings from the container's requests and limits, as the kubelet maps them. */
export function linuxResources(container: V1Container): LinuxContainerConfig['resources'] {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const cpuRequest = requests.cpu ?? limits.cpu;
  const shares = cpuRequest === undefined ? MIN_SHARES : BigInt(Math.max(2, Math.floor((parseMilliCpu(cpuRequest) * 1024) / 1000)));
  const cpuLimit = limits.cpu === undefined ? undefined : parseMilliCpu(limits.cpu);
  const memoryLimit = limits.memory === undefined ? undefined : parseQuantity(limits.memory);
  return {
    cpuShares: shares,
    ...(cpuLimit === undefined ? {} : { cpuPeriod: CPU_PERIOD_US, cpuQuota: BigInt(Math.max(1000, Math.floor((cpuLimit * Number(CPU_PERIOD_US)) / 1000))) }),
    ...(memoryLimit === undefined ? {} : { memoryLimitInBytes: BigInt(Math.floor(memoryLimit)) }),
  };
}

function securityContext(options: ContainerConfigOptions): LinuxContainerConfig['securityContext'] {
  const { pod, container } = options;
  return { ...containerSecurityContext({ pod, container, settings: options.security, imageUser: options.imageUser }), namespaceOptions: options.namespaces ?? podNamespaces(pod) };
}

/**
 * In a pod's own user namespace every mount is idmapped with the pod's mappings, as the kubelet's
 * applyPlatformSpecificContainerConfig sets them: the runtime then shows the volumes' host owners
 * (root, fsGroup) inside the namespace as the same IDs, instead of the overflow ID.
 */
function idMappedMounts(mounts: readonly Mount[], userNamespace: UserNamespace | undefined): readonly Mount[] {
  if (userNamespace?.mode !== 'POD') return mounts;
  return mounts.map((m) => ({ ...m, uidMappings: userNamespace.uids, gidMappings: userNamespace.gids }));
}

/** The preStop handler and ports, kept on the container as the kubelet keeps them (JSON). */
function restorableSpec(container: V1Container): Record<string, string> {
  const preStop = container.lifecycle?.preStop;
  const ports = container.ports ?? [];
  return {
    ...(preStop === undefined ? {} : { [ANNOTATION_PRE_STOP_HANDLER]: JSON.stringify(preStop) }),
    ...(ports.length === 0 ? {} : { [ANNOTATION_CONTAINER_PORTS]: JSON.stringify(ports) }),
  };
}

/**
 * The device plugins' part of the config, as the kubelet's GenerateRunContainerOptions orders it:
 * their envs and mounts first (the container's own come after and win), their device nodes and
 * CDI devices, and their annotations under the kubelet's own.
 */
function deviceParts(devices: DeviceRunOptions | undefined): Pick<ContainerConfig, 'devices' | 'cdiDevices'> & { envs: readonly KeyValue[]; mounts: readonly Mount[]; annotations: Readonly<Record<string, string>> } {
  if (devices === undefined) return { envs: [], mounts: [], annotations: {} };
  return {
    envs: devices.envs,
    mounts: devices.mounts.map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readOnly })),
    annotations: devices.annotations,
    ...(devices.devices.length === 0 ? {} : { devices: devices.devices }),
    ...(devices.cdiDevices.length === 0 ? {} : { cdiDevices: devices.cdiDevices }),
  };
}

/** Builds the CRI config of one container. Pure. @throws InvalidSecurityProfileError */
export function buildContainerConfig(options: ContainerConfigOptions): ContainerConfig {
  const { pod, container } = options;
  const identity = podIdentity(pod);
  const fromDevices = deviceParts(options.devices);
  return {
    ...(fromDevices.devices === undefined ? {} : { devices: fromDevices.devices }),
    ...(fromDevices.cdiDevices === undefined ? {} : { cdiDevices: fromDevices.cdiDevices }),
    metadata: { name: container.name, attempt: options.restartCount },
    image: { image: options.imageRef },
    command: expandCommand(container.command, [...fromDevices.envs, ...options.env]),
    args: expandCommand(container.args, [...fromDevices.envs, ...options.env]),
    workingDir: container.workingDir ?? '',
    envs: [...fromDevices.envs, ...options.env],
    mounts: idMappedMounts([...fromDevices.mounts, ...options.mounts], options.namespaces?.userNamespace),
    labels: containerLabels(identity, container.name, options.nodeName),
    annotations: {
      ...fromDevices.annotations,
      [ANNOTATION_CONTAINER_HASH]: hashContainerSpec(container),
      [ANNOTATION_RESTART_COUNT]: String(options.restartCount),
      [ANNOTATION_TERMINATION_MESSAGE_PATH]: container.terminationMessagePath ?? '/dev/termination-log',
      [ANNOTATION_TERMINATION_MESSAGE_POLICY]: container.terminationMessagePolicy ?? 'File',
      [ANNOTATION_GRACE_PERIOD]: String(podGracePeriodSeconds(pod)),
      [ANNOTATION_CONTAINER_KIND]: options.kind,
      [ANNOTATION_RESOURCES]: resourcesAnnotation(container),
      ...restorableSpec(container),
    },
    logPath: `${container.name}/${options.restartCount}.log`,
    stdin: container.stdin === true,
    stdinOnce: container.stdinOnce === true,
    tty: container.tty === true,
    linux: {
      resources: { ...linuxResources(container), oomScoreAdj: BigInt(containerOomScoreAdj(pod, container, options.memoryCapacityBytes)) },
      securityContext: securityContext(options),
    },
  };
}
