/**
 * A recording, in-memory container runtime implementing both `RuntimeService` and `ImageService`,
 * for component tests of reconcilers, PLEG and housekeeping.
 *
 * It records every call in order (`calls`), can fail the next call of a method with an injected
 * error (`injectError`), and keeps sandboxes, containers and images with the state transitions of
 * containerd 1.6 (see the notes on each method). Nothing runs: a container stays RUNNING until the
 * test exits it (`setContainerExited`) or nodelet stops it.
 */
import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriCancelledError, CriError, CriNotFoundError } from '../../cri/errors.js';
import { FakeImageStore } from './fake-images.js';
import type {
  AuthConfig,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerLogRuntime,
  ContainerState,
  ContainerStatus,
  ExecSyncResult,
  FilesystemUsage,
  Image,
  ImageService,
  ImageSpec,
  Labels,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  PodSandboxStatus,
  RuntimeCondition,
  RuntimeHandlerInfo,
  RuntimeWideFeatures,
  RuntimeService,
  RuntimeStatus,
  RuntimeConfigReader,
  RuntimeConfiguration,
  CgroupDriver,
  VersionInfo,
} from '../../cri/types.js';

/** A method of either service, by its TypeScript name. */
export type FakeMethod = keyof RuntimeService | keyof RuntimeConfigReader | keyof ImageService | keyof ContainerLogRuntime;

/** One recorded call. */
export interface FakeCall {
  readonly method: FakeMethod;
  readonly args: readonly unknown[];
}

/** A sandbox as the fake keeps it (inspect with `getSandbox`). */
export interface FakeSandbox {
  readonly id: string;
  readonly config: PodSandboxConfig;
  readonly runtimeHandler: string;
  state: PodSandboxState;
  readonly createdAt: bigint;
  /** Empty for host-network sandboxes. */
  readonly ip: string;
}

/** A container as the fake keeps it (inspect with `getContainer`). */
export interface FakeContainer {
  readonly id: string;
  readonly podSandboxId: string;
  readonly config: ContainerConfig;
  readonly imageRef: string;
  readonly logPath: string;
  state: ContainerState;
  readonly createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  /** The cgroup values applied now: the config's, then each `updateContainerResources`. */
  resources: LinuxContainerResources;
}

/**
 * Answers `execSync`; the default answers exit code 0 with no output. A promise models a command
 * that takes time (one that never settles: a hung hook); `timeoutSeconds` and `signal` are what the
 * caller passed.
 */
export type FakeExecHandler = (containerId: string, cmd: readonly string[], call: { readonly timeoutSeconds: number; readonly signal: AbortSignal | undefined }) => ExecSyncResult | Promise<ExecSyncResult>;

export interface FakeRuntimeOptions {
  /** Milliseconds since the epoch; timestamps are derived from it. `Date.now` by default. */
  readonly now?: () => number;
  /** Images present from the start (e.g. `busybox:1.35`). */
  readonly images?: readonly string[];
  /** First two octets of sandbox IPs, `10.88` by default: sandboxes get 10.88.0.2, 10.88.0.3, … in creation order. */
  readonly podSubnet?: string;
}

/** Exit code of a container killed by `stopContainer` (SIGKILL after the grace period). */
export const FAKE_STOP_EXIT_CODE = 137;

function matchesLabels(labels: Labels, selector: Labels | undefined): boolean {
  return Object.entries(selector ?? {}).every(([key, value]) => labels[key] === value);
}

/** The CRI name of a method, for errors: `stopContainer` → `StopContainer`. */
function criName(method: FakeMethod): string {
  return method.charAt(0).toUpperCase() + method.slice(1);
}

function notFound(method: FakeMethod, what: string, id: string): CriNotFoundError {
  return new CriNotFoundError({ method: criName(method), code: GrpcStatus.NOT_FOUND, message: `${what} "${id}" not found` });
}

function failedPrecondition(method: FakeMethod, message: string): CriError {
  return new CriError({ method: criName(method), code: GrpcStatus.FAILED_PRECONDITION, message });
}

function signalOf(arg: unknown): AbortSignal | undefined {
  if (typeof arg !== 'object' || arg === null || !('signal' in arg)) return undefined;
  const signal: unknown = arg.signal;
  return signal instanceof AbortSignal ? signal : undefined;
}

export class FakeRuntime implements RuntimeService, RuntimeConfigReader, ImageService, ContainerLogRuntime {
  /** Every call, in order. */
  readonly calls: FakeCall[] = [];
  /** Conditions `status()` reports; tests may replace them. */
  conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  /** Handlers `status()` reports (containerd 2's default: the runc handler as "" and "runc", user namespaces and rro on). */
  handlers: RuntimeHandlerInfo[] = [
    { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
    { name: 'runc', recursiveReadOnlyMounts: true, userNamespaces: true },
  ];
  /** Runtime-wide features `status()` reports. */
  features: RuntimeWideFeatures = { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false };
  /** Where `imageFsInfo` says the images are stored. */
  imageFsMountpoint = '/var/lib/fake-runtime/snapshots';
  execHandler: FakeExecHandler = () => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });

  private readonly now: () => number;
  private readonly podSubnet: string;
  private readonly injected = new Map<FakeMethod, Error[]>();
  private readonly sandboxes = new Map<string, FakeSandbox>();
  private readonly containers = new Map<string, FakeContainer>();
  private readonly imageStore = new FakeImageStore();
  private idCounter = 0;
  private ipCounter = 0;

  constructor(options: FakeRuntimeOptions = {}) {
    this.now = options.now ?? Date.now;
    this.podSubnet = options.podSubnet ?? '10.88';
    for (const image of options.images ?? []) this.imageStore.add(image);
  }

  // ------------------------------------------------------------------ test controls

  /** The next call of `method` records itself, then throws `error`. Several queue up in order. */
  injectError(method: FakeMethod, error: Error): void {
    const queue = this.injected.get(method) ?? [];
    queue.push(error);
    this.injected.set(method, queue);
  }

  /** Calls of one method, in order. */
  callsTo(method: FakeMethod): FakeCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** Makes a running container exit as if its process ended by itself. */
  setContainerExited(containerId: string, exitCode: number, reason = exitCode === 0 ? 'Completed' : 'Error'): void {
    const container = this.containers.get(containerId);
    if (container === undefined) throw new Error(`fake runtime: no container ${containerId}`);
    this.exit(container, exitCode, reason);
  }

  /** Adds an image as if pulled; `user` is its USER as ImageStatus reports it (none: root). */
  addImage(ref: string, user?: { readonly uid?: bigint; readonly username?: string }): Image {
    return this.imageStore.add(ref, undefined, user);
  }

  /** Adds an image of `size` bytes, optionally pinned (as containerd 1.7 pins its sandbox image). */
  addSizedImage(ref: string, size: bigint, pinned = false): Image {
    return this.imageStore.add(ref, size, pinned ? { pinned } : {});
  }

  getSandbox(id: string): FakeSandbox | undefined {
    return this.sandboxes.get(id);
  }

  getContainer(id: string): FakeContainer | undefined {
    return this.containers.get(id);
  }

  // ------------------------------------------------------------------ RuntimeService

  async version(options?: CallOptions): Promise<VersionInfo> {
    await this.record('version', [options]);
    return { version: '0.1.0', runtimeName: 'fake', runtimeVersion: '0.0.0', runtimeApiVersion: 'v1' };
  }

  /** What runtimeConfig reports (containerd's default runc configuration: cgroupfs). */
  cgroupDriver: CgroupDriver = 'cgroupfs';

  async runtimeConfig(options?: CallOptions): Promise<RuntimeConfiguration> {
    await this.record('runtimeConfig', [options]);
    return { cgroupDriver: this.cgroupDriver };
  }

  async status(options?: CallOptions): Promise<RuntimeStatus> {
    await this.record('status', [options]);
    return { conditions: this.conditions.map((c) => ({ ...c })), handlers: this.handlers.map((h) => ({ ...h })), features: { ...this.features } };
  }

  /** A new READY sandbox with the next IP (none for host network). Like containerd, refuses a duplicate name+attempt. */
  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', options?: CallOptions): Promise<string> {
    await this.record('runPodSandbox', [config, runtimeHandler, options]);
    const { name, namespace, uid, attempt } = config.metadata;
    for (const s of this.sandboxes.values()) {
      const m = s.config.metadata;
      if (m.name === name && m.namespace === namespace && m.uid === uid && m.attempt === attempt) {
        throw new CriError({ method: 'RunPodSandbox', code: GrpcStatus.ALREADY_EXISTS, message: `name reserved by ${s.id}` });
      }
    }
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    const sandbox: FakeSandbox = {
      id: this.nextId('sandbox'),
      config,
      runtimeHandler,
      state: 'SANDBOX_READY',
      createdAt: this.nowNanos(),
      ip: hostNetwork ? '' : this.nextIp(),
    };
    this.sandboxes.set(sandbox.id, sandbox);
    return sandbox.id;
  }

  /** Kills the sandbox's running containers and marks it NOTREADY. A missing sandbox is fine. */
  async stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.record('stopPodSandbox', [podSandboxId, options]);
    const sandbox = this.sandboxes.get(podSandboxId);
    if (sandbox === undefined) return;
    for (const c of this.containersOf(podSandboxId)) {
      if (c.state === 'CONTAINER_RUNNING') this.exit(c, FAKE_STOP_EXIT_CODE, 'Error');
    }
    sandbox.state = 'SANDBOX_NOTREADY';
  }

  /** Force-stops, then removes the sandbox and its containers. A missing sandbox is fine. */
  async removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    await this.record('removePodSandbox', [podSandboxId, options]);
    for (const c of this.containersOf(podSandboxId)) this.containers.delete(c.id);
    this.sandboxes.delete(podSandboxId);
  }

  async podSandboxStatus(podSandboxId: string, options?: CallOptions): Promise<PodSandboxStatus> {
    await this.record('podSandboxStatus', [podSandboxId, options]);
    const s = this.sandboxes.get(podSandboxId);
    if (s === undefined) throw notFound('podSandboxStatus', 'sandbox', podSandboxId);
    return {
      id: s.id,
      metadata: { ...s.config.metadata },
      state: s.state,
      createdAt: s.createdAt,
      network: { ip: s.ip, additionalIps: [] },
      labels: { ...s.config.labels },
      annotations: { ...s.config.annotations },
      runtimeHandler: s.runtimeHandler,
    };
  }

  async listPodSandbox(filter?: PodSandboxFilter, options?: CallOptions): Promise<PodSandbox[]> {
    await this.record('listPodSandbox', [filter, options]);
    return [...this.sandboxes.values()]
      .filter((s) => (filter?.id === undefined || s.id === filter.id) && (filter?.state ?? s.state) === s.state)
      .filter((s) => matchesLabels(s.config.labels, filter?.labelSelector))
      .map((s) => ({
        id: s.id,
        metadata: { ...s.config.metadata },
        state: s.state,
        createdAt: s.createdAt,
        labels: { ...s.config.labels },
        annotations: { ...s.config.annotations },
        runtimeHandler: s.runtimeHandler,
      }));
  }

  /** A CREATED container. The sandbox must be READY and the image present, as in containerd. */
  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    options?: CallOptions,
  ): Promise<string> {
    await this.record('createContainer', [podSandboxId, config, sandboxConfig, options]);
    const sandbox = this.sandboxes.get(podSandboxId);
    if (sandbox === undefined) throw notFound('createContainer', 'sandbox', podSandboxId);
    if (sandbox.state !== 'SANDBOX_READY') throw failedPrecondition('createContainer', `sandbox ${podSandboxId} is not ready`);
    const image = this.imageStore.find(config.image.image);
    if (image === undefined) throw notFound('createContainer', 'image', config.image.image);
    const duplicate = this.containersOf(podSandboxId).find(
      (c) => c.config.metadata.name === config.metadata.name && c.config.metadata.attempt === config.metadata.attempt,
    );
    if (duplicate !== undefined) {
      throw new CriError({ method: 'CreateContainer', code: GrpcStatus.ALREADY_EXISTS, message: `name reserved by ${duplicate.id}` });
    }
    this.checkPidTarget(podSandboxId, config);
    const container: FakeContainer = {
      id: this.nextId('container'),
      podSandboxId,
      config,
      imageRef: image.id,
      logPath: config.logPath === '' ? '' : join(sandbox.config.logDirectory, config.logPath),
      state: 'CONTAINER_CREATED',
      createdAt: this.nowNanos(),
      startedAt: 0n,
      finishedAt: 0n,
      exitCode: 0,
      reason: '',
      message: '',
      resources: { ...config.linux?.resources },
    };
    this.containers.set(container.id, container);
    return container.id;
  }

  /** CREATED → RUNNING; any other state is an error, as is a sandbox that is not READY. */
  async startContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.record('startContainer', [containerId, options]);
    const c = this.requireContainer('startContainer', containerId);
    if (c.state !== 'CONTAINER_CREATED') throw failedPrecondition('startContainer', `container is ${c.state}`);
    if (this.sandboxes.get(c.podSandboxId)?.state !== 'SANDBOX_READY') {
      throw failedPrecondition('startContainer', `sandbox ${c.podSandboxId} is not ready`);
    }
    c.state = 'CONTAINER_RUNNING';
    c.startedAt = this.nowNanos();
  }

  /** RUNNING → EXITED with `FAKE_STOP_EXIT_CODE`; other states and missing containers are left alone. */
  async stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    await this.record('stopContainer', [containerId, timeoutSeconds, options]);
    const c = this.containers.get(containerId);
    if (c?.state === 'CONTAINER_RUNNING') this.exit(c, FAKE_STOP_EXIT_CODE, 'Error');
  }

  /** Removes a container in any state (a running one is killed first). A missing container is fine. */
  async removeContainer(containerId: string, options?: CallOptions): Promise<void> {
    await this.record('removeContainer', [containerId, options]);
    this.containers.delete(containerId);
  }

  async listContainers(filter?: ContainerFilter, options?: CallOptions): Promise<Container[]> {
    await this.record('listContainers', [filter, options]);
    return [...this.containers.values()]
      .filter((c) => (filter?.id === undefined || c.id === filter.id) && (filter?.state ?? c.state) === c.state)
      .filter((c) => (filter?.podSandboxId ?? c.podSandboxId) === c.podSandboxId)
      .filter((c) => matchesLabels(c.config.labels, filter?.labelSelector))
      .map((c) => ({
        id: c.id,
        podSandboxId: c.podSandboxId,
        metadata: { ...c.config.metadata },
        image: { image: c.config.image.image },
        imageRef: c.imageRef,
        state: c.state,
        createdAt: c.createdAt,
        labels: { ...c.config.labels },
        annotations: { ...c.config.annotations },
      }));
  }

  async containerStatus(containerId: string, options?: CallOptions): Promise<ContainerStatus> {
    await this.record('containerStatus', [containerId, options]);
    const c = this.requireContainer('containerStatus', containerId);
    return {
      id: c.id,
      metadata: { ...c.config.metadata },
      state: c.state,
      createdAt: c.createdAt,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      image: { image: c.config.image.image },
      imageRef: c.imageRef,
      reason: c.reason,
      message: c.message,
      labels: { ...c.config.labels },
      annotations: { ...c.config.annotations },
      mounts: c.config.mounts.map((m) => ({ ...m })),
      logPath: c.logPath,
      // As containerd 1.6: the applied cgroup values, unset ones as 0.
      resources: {
        cpuPeriod: c.resources.cpuPeriod ?? 0n,
        cpuQuota: c.resources.cpuQuota ?? 0n,
        cpuShares: c.resources.cpuShares ?? 0n,
        memoryLimitInBytes: c.resources.memoryLimitInBytes ?? 0n,
      },
    };
  }

  /** As containerd 1.6: zero fields keep their value; an exited container is refused. */
  async updateContainerResources(containerId: string, resources: LinuxContainerResources, options?: CallOptions): Promise<void> {
    await this.record('updateContainerResources', [containerId, resources, options]);
    const c = this.requireContainer('updateContainerResources', containerId);
    if (c.state === 'CONTAINER_EXITED') throw failedPrecondition('updateContainerResources', `container ${containerId} is not running`);
    const kept = (v: bigint | undefined, old: bigint | undefined): bigint | undefined => (v === undefined || v === 0n ? old : v);
    c.resources = {
      ...c.resources,
      cpuPeriod: kept(resources.cpuPeriod, c.resources.cpuPeriod),
      cpuQuota: kept(resources.cpuQuota, c.resources.cpuQuota),
      cpuShares: kept(resources.cpuShares, c.resources.cpuShares),
      memoryLimitInBytes: kept(resources.memoryLimitInBytes, c.resources.memoryLimitInBytes),
    };
  }

  /**
   * As containerd 1.6: a container that is not RUNNING is refused (and no file is made); a running
   * one gets its log path opened again, creating an empty file when it was renamed away (its
   * directory must exist, as the real runtime's must).
   */
  async reopenContainerLog(containerId: string, options?: CallOptions): Promise<void> {
    await this.record('reopenContainerLog', [containerId, options]);
    const c = this.requireContainer('reopenContainerLog', containerId);
    if (c.state !== 'CONTAINER_RUNNING') throw failedPrecondition('reopenContainerLog', 'container is not running');
    if (c.logPath !== '') await appendFile(c.logPath, '');
  }

  /** Answers through `execHandler`; the container must be RUNNING. */
  async execSync(containerId: string, cmd: readonly string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult> {
    await this.record('execSync', [containerId, cmd, timeoutSeconds, options]);
    const c = this.requireContainer('execSync', containerId);
    if (c.state !== 'CONTAINER_RUNNING') throw failedPrecondition('execSync', `container is ${c.state}`);
    return this.execHandler(containerId, cmd, { timeoutSeconds, signal: signalOf(options) });
  }

  // ------------------------------------------------------------------ ImageService

  async imageStatus(image: ImageSpec, options?: CallOptions): Promise<Image | undefined> {
    await this.record('imageStatus', [image, options]);
    return this.imageStore.find(image.image);
  }

  /** Always succeeds (inject an error to fail it); returns the image ID as containerd does. */
  async pullImage(image: ImageSpec, auth?: AuthConfig, sandboxConfig?: PodSandboxConfig, options?: CallOptions): Promise<string> {
    await this.record('pullImage', [image, auth, sandboxConfig, options]);
    return this.imageStore.add(image.image).id;
  }

  async listImages(options?: CallOptions): Promise<Image[]> {
    await this.record('listImages', [options]);
    return this.imageStore.list();
  }

  async removeImage(image: ImageSpec, options?: CallOptions): Promise<void> {
    await this.record('removeImage', [image, options]);
    this.imageStore.remove(image.image);
  }

  /** One filesystem at {@link FakeRuntime.imageFsMountpoint}; its used bytes are the images' sizes. */
  async imageFsInfo(options?: CallOptions): Promise<FilesystemUsage[]> {
    await this.record('imageFsInfo', [options]);
    const usedBytes = this.imageStore.list().reduce((sum, image) => sum + image.size, 0n);
    return [{ timestamp: this.nowNanos(), mountpoint: this.imageFsMountpoint, usedBytes, inodesUsed: 0n }];
  }

  // ------------------------------------------------------------------ internals

  /** Records the call, then throws an injected error if one is queued. Async so callers always get a rejection. */
  private async record(method: FakeMethod, args: readonly unknown[]): Promise<void> {
    // Like the real transport: a call whose signal is already aborted is never sent.
    const signal = args.map(signalOf).find((s) => s !== undefined);
    if (signal?.aborted === true) throw new CriCancelledError({ method: criName(method), code: GrpcStatus.CANCELLED, message: 'cancelled by the caller' });
    // Drop trailing undefined (omitted optional arguments) so recorded args read like the call site.
    const trimmed = [...args];
    while (trimmed.length > 0 && trimmed[trimmed.length - 1] === undefined) trimmed.pop();
    this.calls.push({ method, args: trimmed });
    const error = this.injected.get(method)?.shift();
    if (error !== undefined) throw error;
    await Promise.resolve();
  }

  /** A TARGET pid namespace joins a running container of the same sandbox: containerd needs its process. */
  private checkPidTarget(podSandboxId: string, config: ContainerConfig): void {
    const ns = config.linux?.securityContext?.namespaceOptions;
    if (ns?.pid !== 'TARGET') return;
    const target = this.containers.get(ns.targetId ?? '');
    if (target?.podSandboxId !== podSandboxId || target.state !== 'CONTAINER_RUNNING') {
      throw failedPrecondition('createContainer', `target container ${ns.targetId ?? ''} is not running in sandbox ${podSandboxId}`);
    }
  }

  private requireContainer(method: FakeMethod, containerId: string): FakeContainer {
    const c = this.containers.get(containerId);
    if (c === undefined) throw notFound(method, 'container', containerId);
    return c;
  }

  private containersOf(podSandboxId: string): FakeContainer[] {
    return [...this.containers.values()].filter((c) => c.podSandboxId === podSandboxId);
  }

  private exit(c: FakeContainer, exitCode: number, reason: string): void {
    c.state = 'CONTAINER_EXITED';
    c.finishedAt = this.nowNanos();
    c.exitCode = exitCode;
    c.reason = reason;
  }

  private nowNanos(): bigint {
    return BigInt(Math.trunc(this.now())) * 1_000_000n;
  }

  private nextId(kind: string): string {
    this.idCounter += 1;
    return createHash('sha256').update(`${kind} ${this.idCounter}`).digest('hex');
  }

  private nextIp(): string {
    // Hosts .2–.254 of consecutive /24s: .0 is the network, .1 the gateway, .255 broadcast.
    const n = this.ipCounter;
    this.ipCounter += 1;
    return `${this.podSubnet}.${Math.floor(n / 253)}.${(n % 253) + 2}`;
  }
}
