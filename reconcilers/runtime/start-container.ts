/**
 * Starts one container of a pod, as the kubelet's `startContainer` does: check the restart
 * backoff (a container that exited waits 10 s, doubling to 5 min: CrashLoopBackOff), ensure the
 * image, resolve env and mounts (with the pod's managed /etc/hosts), create, start, run the
 * postStart hook (a failed one kills the container: `hooks/post-start.ts`) — with the kubelet's
 * events at each step. Between the start and the hook, the container's log link
 * (`<link dir>/<pod>_<namespace>_<container>-<id>.log` → its log file) is made for log collectors.
 */
import type { LifecycleMetrics } from '../hooks/run-hook.js';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KeyValue, Mount, NamespaceOptions, PodSandboxConfig, RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import type { ContainerToStart } from './pod-actions.js';
import { buildContainerConfig } from '../container/container-config.js';
import { resolveContainerEnv, type EnvSourceApi } from '../container/container-env.js';
import { hashContainerSpec } from '../model/container-hash.js';
import { ANNOTATION_IMAGE_VOLUMES } from '../model/runtime-labels.js';
import type { ServiceLister } from '../container/service-env.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import type { EnsuredImage, ImagePuller } from '../images/image-puller.js';
import { latestContainer, type ObservedPod } from '../model/observed-pod.js';
import { formatDuration, type RestartBackoff } from '../model/restart-backoff.js';
import { POST_START_KILL_MESSAGE } from '../hooks/hook-messages.js';
import { runPostStartHook } from '../hooks/post-start.js';
import type { PodKiller } from './kill-pod.js';
import { podGracePeriodSeconds, podNamespaces } from '../container/sandbox-config.js';
import { ephemeralAsContainer, ephemeralNamespaces } from './ephemeral-containers.js';
import { ContainerStartError, errorMessage, isCancellation, isContainerStartError } from '../model/sync-errors.js';
import { ANNOTATION_TERMINATION_MESSAGE_HOST_PATH, prepareTerminationMessageFile } from './termination-message.js';
import { asksRecursiveReadOnly, prepareContainerMounts, type ContainerMountsOptions, type PreparedVolumes } from '../volumes/index.js';
import { imageVolumesFor, type ImageVolumeMetrics, type ImageVolumePulls } from './image-volumes.js';
import { createContainerLogLink, isLogLinkError } from '../model/container-log-links.js';

/** The CRI's error name for an image volume the runtime could not mount (cri-api pkg/errors). */
const IMAGE_VOLUME_MOUNT_FAILED = 'ImageVolumeMountFailed';
import { runtimeHandlerFor, type RuntimeHandlerLookup } from '../container/runtime-handlers.js';
import { handlerInfo, type RuntimeFeatureReader } from './runtime-features.js';
import type { HostsMountRequest, PodDnsConfigurer } from '../dns/pod-dns-configurer.js';
import type { ContainerDeviceSource } from '../devices/device-manager.js';
import type { DeviceRunOptions } from '../devices/types.js';
import { imageUserOf, verifyRunAsNonRoot, type ContainerSecuritySettings, type ImageUser } from '../container/security-context.js';

export interface ContainerStarterOptions {
  readonly runtime: RuntimeService;
  /** The device manager: a container's device plugin allocations (`devices/`); absent: no device plugins. */
  readonly devices?: ContainerDeviceSource;
  readonly puller: ImagePuller;
  readonly envApi: EnvSourceApi;
  /** The node's cached services: every container's service variables. */
  readonly services: ServiceLister;
  readonly events: EventRecorder;
  readonly restartBackoff: RestartBackoff;
  readonly clock: Clock;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  /** nodelet's root directory; per-container files live under `<rootDir>/pods/<uid>/containers/`. */
  readonly rootDir: string;
  /** How containers are confined (seccomp, masked paths). */
  readonly security: ContainerSecuritySettings;
  readonly logger: Logger;
  /** Keeps the pod's managed /etc/hosts and gives its mount. */
  readonly dns: PodDnsConfigurer;
  /** Counts HTTPS lifecycle hooks that fell back to HTTP; absent: not counted. */
  readonly lifecycleMetrics?: LifecycleMetrics;
  /** What the runtime's handlers support (recursive read-only mounts). */
  readonly runtimeFeatures: RuntimeFeatureReader;
  /** The pod's RuntimeClass → its handler, whose features apply. */
  readonly runtimeHandlers: RuntimeHandlerLookup;
  /** Counts image volumes asked for, mounted and failed; absent: not counted. */
  readonly imageVolumeMetrics?: ImageVolumeMetrics;
  /** Counts containers started and failed, by type; absent: not counted. */
  readonly startedContainerMetrics?: StartedContainerMetrics;
  /** Where each started container's log link goes (`--container-log-link-dir`, the kubelet's /var/log/containers). */
  readonly containerLogLinkDir: string;
}

/** The kubelet's container type label: `container`, `init_container` (sidecars too) or `ephemeral_container`. */
export type ContainerTypeLabel = 'container' | 'init_container' | 'ephemeral_container';

const CONTAINER_TYPE_LABEL: Readonly<Record<StartRequest['target']['kind'], ContainerTypeLabel>> = { regular: 'container', init: 'init_container', ephemeral: 'ephemeral_container' };

/** The kubelet's `started_containers_total` and `…_errors_total` (SyncPod's start helper); must not throw. */
export interface StartedContainerMetrics {
  /** A container is to be started: past its restart backoff, before its image and config. */
  containerStarting(containerType: ContainerTypeLabel): void;
  /** Starting it failed, with the kubelet's reason as the code (`ErrImagePull`, `CreateContainerConfigError`, `RunContainerError`, …). */
  containerFailed(containerType: ContainerTypeLabel, code: string): void;
}

export interface StartRequest {
  readonly pod: V1Pod;
  readonly target: ContainerToStart;
  readonly observed: ObservedPod;
  readonly sandboxId: string;
  readonly sandboxConfig: PodSandboxConfig;
  readonly prepared: PreparedVolumes;
  /** The pod's image volumes as this sync pulled them; absent: the pod has none. */
  readonly imageVolumes?: ImageVolumePulls;
  readonly podIps: readonly string[];
  /** Cancels the image pull and the runtime calls. */
  readonly signal?: AbortSignal | undefined;
}

/** The spec of the container a plan entry names. */
export function specOf(pod: V1Pod, target: ContainerToStart): V1Container | undefined {
  switch (target.kind) {
    case 'init':
      return pod.spec?.initContainers?.[target.index];
    case 'regular':
      return pod.spec?.containers[target.index];
    case 'ephemeral': {
      const ephemeral = pod.spec?.ephemeralContainers?.[target.index];
      return ephemeral === undefined ? undefined : ephemeralAsContainer(ephemeral);
    }
  }
}

/**
 * The container's namespaces: the sandbox's (its user namespace included, as the kubelet's
 * container config carries the pod's), or for an ephemeral container its target's process namespace.
 */
function namespacesOf(request: StartRequest, container: V1Container): NamespaceOptions {
  const namespaces = request.sandboxConfig.linux?.securityContext?.namespaceOptions ?? podNamespaces(request.pod);
  if (request.target.kind !== 'ephemeral') return namespaces;
  return ephemeralNamespaces(request.pod.spec?.ephemeralContainers?.[request.target.index] ?? container, namespaces, request.observed);
}

/** Backoff key: pod UID, container name and spec hash (a changed spec starts without waiting). */
export function restartBackoffKey(podUid: string, container: V1Container): string {
  return `${podUid}/${container.name}/${hashContainerSpec(container)}`;
}

function podDescription(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

export class ContainerStarter {
  /** `killer` stops a container whose postStart hook failed (its preStop hook runs too, as in the kubelet). */
  constructor(
    private readonly options: ContainerStarterOptions,
    private readonly killer: Pick<PodKiller, 'stop'>,
  ) {}

  /**
   * Starts the container and returns its runtime ID (undefined when the spec has no such
   * container), or throws a `ContainerStartError` with the kubelet's reason; a cancelled run
   * throws its cancellation as is.
   */
  async start(request: StartRequest): Promise<{ readonly id: string } | undefined> {
    const container = specOf(request.pod, request.target);
    if (container === undefined) return undefined;
    this.checkRestartBackoff(request, container);
    // As the kubelet's SyncPod: counted once past the backoff; a failure by the kubelet's reason.
    const metrics = this.options.startedContainerMetrics;
    const type = CONTAINER_TYPE_LABEL[request.target.kind];
    metrics?.containerStarting(type);
    try {
      return await this.createAndStart(request, container);
    } catch (error) {
      if (isContainerStartError(error)) metrics?.containerFailed(type, error.reason);
      throw error;
    }
  }

  /** Pulls, configures, creates and starts the container, then runs its postStart hook. */
  private async createAndStart(request: StartRequest, container: V1Container): Promise<{ readonly id: string }> {
    const { pod, signal } = request;
    const fieldPath = containerFieldPath(pod, container.name);
    // Before the container's own image, as the kubelet's start fails late on a volume's pull.
    const imageVolumes = imageVolumesFor(pod, container, request.imageVolumes ?? new Map(), this.options.events);
    const image = await this.options.puller.ensureImage(pod, container, signal);
    const imageRef = image.ref;
    const options = signal === undefined ? {} : { signal };
    const { env, mounts } = await this.configStep(pod, container.name, async () => {
      const env = await resolveContainerEnv({
        pod,
        container,
        api: this.options.envApi,
        services: this.options.services,
        podIps: request.podIps,
        nodeIp: this.options.nodeIp,
        nodeAllocatable: this.options.nodeAllocatable,
        volumeHostPaths: request.prepared.hostPaths,
        logEnvFileError: (error) => { this.options.logger.warn({ pod: podDescription(pod), container: container.name, err: error.message }, 'Failed to parse env file'); },
      });
      const rro = await this.recursiveReadOnlySupported(pod, container, signal);
      const volumeMounts = await mountsOf(container, request.prepared, env, { recursiveReadOnlySupported: rro, imageVolumes });
      // The pod's managed /etc/hosts (written now: the sandbox and its IP exist), after the volumes as in the kubelet.
      const hosts = await this.hostsMount({ pod, container, podIps: request.podIps });
      return { env, mounts: hosts === undefined ? volumeMounts : [...volumeMounts, hosts] };
    });
    // After env and mounts, as the kubelet's generateContainerConfig checks them.
    const imageUser = await this.configStep(pod, container.name, () => this.checkImageUser(pod, container, image, signal));
    const namespaces = await this.configStep(pod, container.name, () => Promise.resolve(namespacesOf(request, container)));
    // As the kubelet's GenerateRunContainerOptions: the devices (allocated before the first start, PreStartContainer before each).
    const devices = await this.configStep(pod, container.name, () => this.deviceOptions(pod, container, signal));
    const termination = await prepareTerminationMessageFile({
      rootDir: this.options.rootDir,
      podUid: pod.metadata?.uid ?? '',
      containerName: container.name,
      restartCount: request.target.restartCount,
      containerPath: container.terminationMessagePath ?? '/dev/termination-log',
    });
    const base = buildContainerConfig({
      pod,
      container,
      kind: request.target.kind,
      nodeName: this.options.nodeName,
      restartCount: request.target.restartCount,
      imageRef,
      env,
      mounts: [...mounts, termination.mount],
      security: this.options.security,
      imageUser,
      memoryCapacityBytes: this.options.nodeAllocatable.memoryBytes,
      namespaces,
      ...(devices === undefined ? {} : { devices }),
    });
    const volumeImages: Record<string, string> = imageVolumes.size === 0 ? {} : { [ANNOTATION_IMAGE_VOLUMES]: JSON.stringify([...imageVolumes.values()].map((v) => v.image)) };
    const config = { ...base, annotations: { ...base.annotations, [ANNOTATION_TERMINATION_MESSAGE_HOST_PATH]: termination.hostPath, ...volumeImages } };
    const step = { pod, name: container.name, signal };
    const id = await this.countImageVolumes(imageVolumeCounts(container, imageVolumes), () =>
      this.runtimeStep({ ...step, reason: 'CreateContainerError' }, () => this.options.runtime.createContainer(request.sandboxId, config, request.sandboxConfig, options)),
    );
    this.options.events.record(pod, { type: 'Normal', reason: 'Created', message: `Created container ${container.name}`, fieldPath });
    await this.runtimeStep({ ...step, reason: 'RunContainerError' }, () => this.options.runtime.startContainer(id, options));
    this.options.events.record(pod, { type: 'Normal', reason: 'Started', message: `Started container ${container.name}`, fieldPath });
    await this.linkLog(request.sandboxConfig, { name: config.metadata.name, id, logPath: config.logPath });
    // The kubelet's step 4: the start waits for the postStart hook; a failure kills the container
    // and throws `PostStartHookError`.
    const podIp = request.podIps[0] ?? '';
    const kill = (p: V1Pod, containerId: string, s: AbortSignal | undefined): Promise<void> => this.killAfterPostStart(p, { id: containerId, name: container.name }, podIp, s);
    await runPostStartHook({ ...this.options, kill }, { pod, container, containerId: id, podIp, signal });
    return { id };
  }

  /**
   * The user the image runs as (ImageStatus, as the kubelet's `getImageUser`), checked against
   * runAsNonRoot: a container that would run as root, or as a user name that cannot be checked,
   * fails with `CreateContainerConfigError` and the kubelet's message. The record the presence
   * check read serves when there is one (the kubelet reads ImageStatus again; it says the same).
   */
  /**
   * Whether the pod's handler makes read-only mounts recursive, asked only when a mount wants it
   * (the kubelet's runtimeClassSupportsRecursiveReadOnlyMounts: the handler the runtime lists).
   */
  private async recursiveReadOnlySupported(pod: V1Pod, container: V1Container, signal: AbortSignal | undefined): Promise<boolean> {
    if (!asksRecursiveReadOnly(container)) return false;
    const handler = await runtimeHandlerFor(this.options.runtimeHandlers, pod.spec?.runtimeClassName, signal);
    const snapshot = await this.options.runtimeFeatures.current(signal === undefined ? {} : { signal });
    return handlerInfo(snapshot, handler)?.recursiveReadOnlyMounts === true;
  }

  /** The container's device additions; a failure is the kubelet's CreateContainerConfigError. */
  private async deviceOptions(pod: V1Pod, container: V1Container, signal: AbortSignal | undefined): Promise<DeviceRunOptions | undefined> {
    if (this.options.devices === undefined) return undefined;
    try {
      return await this.options.devices.runOptions(pod, container, signal);
    } catch (error) {
      if (isCancellation(error, signal)) throw error;
      throw new ContainerStartError(container.name, 'CreateContainerConfigError', errorMessage(error), { cause: error });
    }
  }

  private async checkImageUser(pod: V1Pod, container: V1Container, image: EnsuredImage, signal: AbortSignal | undefined): Promise<ImageUser> {
    const user = imageUserOf(image.record ?? (await this.options.puller.imageStatus(image.ref, signal)));
    const refusal = verifyRunAsNonRoot(pod, container, user);
    if (refusal !== undefined) throw new ContainerStartError(container.name, 'CreateContainerConfigError', refusal);
    return user;
  }

  /**
   * Counts a container's image volumes around its creation, as the kubelet's
   * `incrementImageVolumeMetrics`: the volumes asked for; each mount of one as mounted when the
   * runtime created the container, or as failed when the runtime named its image volume error (the
   * CRI's `ImageVolumeMountFailed`, which is only ever in the runtime's message).
   */
  private async countImageVolumes(counts: { volumes: number; mounts: number }, create: () => Promise<string>): Promise<string> {
    const metrics = this.options.imageVolumeMetrics;
    if (counts.volumes === 0 || metrics === undefined) return create();
    metrics.requested(counts.volumes);
    try {
      const id = await create();
      metrics.mounted(counts.mounts);
      return id;
    } catch (error) {
      if (errorMessage(error).includes(IMAGE_VOLUME_MOUNT_FAILED)) metrics.mountFailed(counts.mounts);
      throw error;
    }
  }

  /**
   * The started container's log link, named from the sandbox's and the container's metadata as the
   * kubelet's. A link that cannot be made is logged: log collectors miss the container, which runs.
   */
  private async linkLog(sandbox: PodSandboxConfig, container: { name: string; id: string; logPath: string }): Promise<void> {
    // nodelet always gives a log path; an empty one would make the link point at the pod's log directory.
    if (container.logPath === '' || sandbox.logDirectory === '') return;
    const owner = { podName: sandbox.metadata.name, podNamespace: sandbox.metadata.namespace, containerName: container.name, containerId: container.id };
    const logFile = path.join(sandbox.logDirectory, container.logPath);
    try {
      const outcome = await createContainerLogLink({ dir: this.options.containerLogLinkDir, owner, logFile });
      if (outcome !== 'created') this.options.logger.info({ containerId: container.id, logFile, outcome }, 'no new container log link');
    } catch (error) {
      if (!isLogLinkError(error)) throw error;
      this.options.logger.error({ containerId: container.id, logFile, link: error.link, err: error }, 'Failed to create container log link');
    }
  }

  /** The kubelet's `killContainer(…, "FailedPostStartHook", …)`: the pod's grace period, its preStop hook. */
  private killAfterPostStart(pod: V1Pod, c: { id: string; name: string }, podIp: string, signal: AbortSignal | undefined): Promise<void> {
    const request = { pod, reason: 'postStart hook failed', eventMessage: POST_START_KILL_MESSAGE, podIp, ...(signal === undefined ? {} : { signal }) };
    return this.killer.stop(request, { ...c, state: 'CONTAINER_RUNNING' }, podGracePeriodSeconds(pod));
  }

  /** A container that exited waits out its backoff (measured from its exit) before it restarts. */
  private checkRestartBackoff(request: StartRequest, container: V1Container): void {
    const latest = latestContainer(request.observed, container.name);
    if (latest?.state !== 'CONTAINER_EXITED' || latest.finishedAt === undefined) return;
    const key = restartBackoffKey(request.pod.metadata?.uid ?? '', container);
    const finishedMs = latest.finishedAt.getTime();
    const nowMs = this.options.clock.now();
    const blocked = this.options.restartBackoff.blockedUntil(key, finishedMs, nowMs);
    if (blocked !== undefined) {
      const pod = podDescription(request.pod);
      this.options.events.record(request.pod, {
        type: 'Warning',
        reason: 'BackOff',
        message: `Back-off restarting failed container ${container.name} in pod ${pod}`,
        fieldPath: containerFieldPath(request.pod, container.name),
      });
      const message = `back-off ${formatDuration(blocked.backoffMs)} restarting failed container=${container.name} pod=${pod}`;
      throw new ContainerStartError(container.name, 'CrashLoopBackOff', message, { retryAfterMs: blocked.untilMs - nowMs });
    }
    this.options.restartBackoff.next(key, finishedMs);
  }

  /** The /etc/hosts mount; a hosts file that cannot be written is the container's config error, as in the kubelet. */
  private async hostsMount(request: HostsMountRequest): Promise<Mount | undefined> {
    try {
      return await this.options.dns.hostsMount(request);
    } catch (error) {
      throw new ContainerStartError(request.container.name, 'CreateContainerConfigError', `failed to write /etc/hosts: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Runs a config-building step; its `CreateContainerConfigError` is also reported as an event. */
  private async configStep<T>(pod: V1Pod, name: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof ContainerStartError) {
        this.options.events.record(pod, { type: 'Warning', reason: 'Failed', message: `Error: ${error.message}`, fieldPath: containerFieldPath(pod, name) });
      }
      throw error;
    }
  }

  private async runtimeStep<T>(s: { pod: V1Pod; name: string; signal: AbortSignal | undefined; reason: 'CreateContainerError' | 'RunContainerError' }, step: () => Promise<T>): Promise<T> {
    const { pod, name, reason } = s;
    try {
      return await step();
    } catch (error) {
      // A cancelled run is not the container's fault: no event, no waiting reason.
      if (isCancellation(error, s.signal)) throw error;
      this.options.events.record(pod, { type: 'Warning', reason: 'Failed', message: `Error: ${errorMessage(error)}`, fieldPath: containerFieldPath(pod, name) });
      throw new ContainerStartError(name, reason, errorMessage(error), { cause: error });
    }
  }
}

/** A container's image volumes, and its mounts of them (one volume may be mounted at several paths). */
function imageVolumeCounts(container: V1Container, imageVolumes: ReadonlyMap<string, unknown>): { volumes: number; mounts: number } {
  return { volumes: imageVolumes.size, mounts: (container.volumeMounts ?? []).filter((m) => imageVolumes.has(m.name)).length };
}

async function mountsOf(container: V1Container, prepared: PreparedVolumes, env: readonly KeyValue[], options: Omit<ContainerMountsOptions, 'env'>): Promise<Mount[]> {
  try {
    return await prepareContainerMounts(container, prepared, { ...options, env: Object.fromEntries(env.map((e) => [e.key, e.value])) });
  } catch (error) {
    throw new ContainerStartError(container.name, 'CreateContainerConfigError', errorMessage(error), { cause: error });
  }
}
