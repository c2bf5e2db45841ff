/**
 * `RuntimeService` over gRPC: request building, deadlines, idempotent stop/remove and response
 * validation. Transport concerns (connection, error mapping, log de-duplication) live in
 * `transport.ts`; message conversion in `convert-*.ts`.
 */
import {
  containerConfigToWire,
  containerFilterToWire,
  linuxResourcesToWire,
  podSandboxConfigToWire,
  podSandboxFilterToWire,
} from './convert-request.js';
import {
  containerFromWire,
  containerStatusFromWire,
  execSyncFromWire,
  podSandboxFromWire,
  podSandboxStatusFromWire,
  requireId,
  runtimeConfigFromWire,
  runtimeStatusFromWire,
  versionFromWire,
} from './convert-response.js';
import { containerStatsFromWire } from './convert-stats.js';
import type { RuntimeMethod } from './proto.js';
import { ignoreNotFound, requireArgument } from './transport.js';
import type { CriTransport } from './transport.js';
import type {
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatus,
  ExecSyncResult,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatus,
  RuntimeService,
  ContainerCheckpointer,
  RuntimeConfigReader,
  RuntimeConfiguration,
  RuntimeStatus,
  StreamOptions,
  StatsRuntime,
  StreamingRuntime,
  ContainerLogRuntime,
  VersionInfo,
} from './types.js';
import type { RuntimeResponses } from './wire.js';

/** The CRI API version nodelet speaks, sent in `Version` as the kubelet does. */
const CRI_API_VERSION = '0.1.0';

export interface ServiceClientOptions {
  readonly transport: CriTransport;
  /** Deadline of a call whose `CallOptions` give none. */
  readonly defaultTimeoutMs: number;
}

interface RuntimeCall<M extends RuntimeMethod> {
  readonly method: M;
  readonly request: object;
  readonly options: CallOptions | undefined;
  readonly subject?: string;
  /** Added to the deadline for calls that wait on the runtime's own timer (stop, exec). */
  readonly extraTimeoutMs?: number;
}

/** Seconds as the runtime takes them: a non-negative whole number, sent as an int64 string. */
function wholeSeconds(seconds: number): string {
  return String(Math.max(0, Math.ceil(seconds)));
}

export class GrpcRuntimeService implements RuntimeService, RuntimeConfigReader, ContainerCheckpointer, StreamingRuntime, StatsRuntime, ContainerLogRuntime {
  constructor(private readonly options: ServiceClientOptions) {}

  version(options?: CallOptions): Promise<VersionInfo> {
    const call = { method: 'Version', request: { version: CRI_API_VERSION }, options } as const;
    return this.call(call, (wire) => versionFromWire(wire));
  }

  status(options?: CallOptions): Promise<RuntimeStatus> {
    const call = { method: 'Status', request: { verbose: false }, options } as const;
    return this.call(call, (wire) => runtimeStatusFromWire('Status', wire));
  }

  runtimeConfig(options?: CallOptions): Promise<RuntimeConfiguration> {
    const call = { method: 'RuntimeConfig', request: {}, options } as const;
    return this.call(call, (wire) => runtimeConfigFromWire(wire));
  }

  runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', options?: CallOptions): Promise<string> {
    const request = { config: podSandboxConfigToWire(config), runtimeHandler };
    const call = { method: 'RunPodSandbox', request, options, subject: config.metadata.uid } as const;
    return this.call(call, (wire) => requireId('RunPodSandbox', 'sandbox ID', wire.podSandboxId));
  }

  async stopPodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    requireArgument('StopPodSandbox', 'sandbox ID', podSandboxId);
    const call = { method: 'StopPodSandbox', request: { podSandboxId }, options, subject: podSandboxId } as const;
    await ignoreNotFound(this.call(call, () => undefined));
  }

  async removePodSandbox(podSandboxId: string, options?: CallOptions): Promise<void> {
    requireArgument('RemovePodSandbox', 'sandbox ID', podSandboxId);
    const call = { method: 'RemovePodSandbox', request: { podSandboxId }, options, subject: podSandboxId } as const;
    await ignoreNotFound(this.call(call, () => undefined));
  }

  async podSandboxStatus(podSandboxId: string, options?: CallOptions): Promise<PodSandboxStatus> {
    requireArgument('PodSandboxStatus', 'sandbox ID', podSandboxId);
    const request = { podSandboxId, verbose: false };
    const call = { method: 'PodSandboxStatus', request, options, subject: podSandboxId } as const;
    return this.call(call, (wire) => podSandboxStatusFromWire('PodSandboxStatus', wire.status));
  }

  listPodSandbox(filter?: PodSandboxFilter, options?: CallOptions): Promise<PodSandbox[]> {
    const call = { method: 'ListPodSandbox', request: { filter: podSandboxFilterToWire(filter) }, options } as const;
    return this.call(call, (wire) => wire.items.map((item) => podSandboxFromWire('ListPodSandbox', item)));
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    options?: CallOptions,
  ): Promise<string> {
    requireArgument('CreateContainer', 'sandbox ID', podSandboxId);
    // containerd 1.6 dereferences sandbox_config unconditionally: always send it.
    const request = {
      podSandboxId,
      config: containerConfigToWire(config),
      sandboxConfig: podSandboxConfigToWire(sandboxConfig),
    };
    const call = { method: 'CreateContainer', request, options, subject: `${podSandboxId}/${config.metadata.name}` } as const;
    return this.call(call, (wire) => requireId('CreateContainer', 'container ID', wire.containerId));
  }

  async startContainer(containerId: string, options?: CallOptions): Promise<void> {
    requireArgument('StartContainer', 'container ID', containerId);
    const call = { method: 'StartContainer', request: { containerId }, options, subject: containerId } as const;
    await this.call(call, () => undefined);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    requireArgument('StopContainer', 'container ID', containerId);
    const timeout = wholeSeconds(timeoutSeconds);
    const call = {
      method: 'StopContainer',
      request: { containerId, timeout },
      options,
      subject: containerId,
      extraTimeoutMs: Number(timeout) * 1000,
    } as const;
    await ignoreNotFound(this.call(call, () => undefined));
  }

  async removeContainer(containerId: string, options?: CallOptions): Promise<void> {
    requireArgument('RemoveContainer', 'container ID', containerId);
    const call = { method: 'RemoveContainer', request: { containerId }, options, subject: containerId } as const;
    await ignoreNotFound(this.call(call, () => undefined));
  }

  listContainers(filter?: ContainerFilter, options?: CallOptions): Promise<Container[]> {
    const call = { method: 'ListContainers', request: { filter: containerFilterToWire(filter) }, options } as const;
    return this.call(call, (wire) => wire.containers.map((c) => containerFromWire('ListContainers', c)));
  }

  async containerStatus(containerId: string, options?: CallOptions): Promise<ContainerStatus> {
    requireArgument('ContainerStatus', 'container ID', containerId);
    const request = { containerId, verbose: false };
    const call = { method: 'ContainerStatus', request, options, subject: containerId } as const;
    return this.call(call, (wire) => containerStatusFromWire('ContainerStatus', wire.status));
  }

  async updateContainerResources(containerId: string, resources: LinuxContainerResources, options?: CallOptions): Promise<void> {
    requireArgument('UpdateContainerResources', 'container ID', containerId);
    const request = { containerId, linux: linuxResourcesToWire(resources) };
    const call = { method: 'UpdateContainerResources', request, options, subject: containerId } as const;
    await this.call(call, () => undefined);
  }

  async reopenContainerLog(containerId: string, options?: CallOptions): Promise<void> {
    requireArgument('ReopenContainerLog', 'container ID', containerId);
    const call = { method: 'ReopenContainerLog', request: { containerId }, options, subject: containerId } as const;
    await this.call(call, () => undefined);
  }

  async execSync(
    containerId: string,
    cmd: readonly string[],
    timeoutSeconds: number,
    options?: CallOptions,
  ): Promise<ExecSyncResult> {
    requireArgument('ExecSync', 'container ID', containerId);
    const timeout = wholeSeconds(timeoutSeconds);
    const call = {
      method: 'ExecSync',
      request: { containerId, cmd: [...cmd], timeout },
      options,
      subject: containerId,
      extraTimeoutMs: Number(timeout) * 1000,
    } as const;
    return this.call(call, (wire) => execSyncFromWire(wire));
  }

  async exec(containerId: string, cmd: readonly string[], streams: StreamOptions, options?: CallOptions): Promise<string> {
    requireArgument('Exec', 'container ID', containerId);
    const request = { containerId, cmd: [...cmd], ...streams };
    const call = { method: 'Exec', request, options, subject: containerId } as const;
    return this.call(call, (wire) => requireId('Exec', 'streaming URL', wire.url));
  }

  async attach(containerId: string, streams: StreamOptions, options?: CallOptions): Promise<string> {
    requireArgument('Attach', 'container ID', containerId);
    const call = { method: 'Attach', request: { containerId, ...streams }, options, subject: containerId } as const;
    return this.call(call, (wire) => requireId('Attach', 'streaming URL', wire.url));
  }

  async portForward(podSandboxId: string, ports: readonly number[], options?: CallOptions): Promise<string> {
    requireArgument('PortForward', 'sandbox ID', podSandboxId);
    const call = { method: 'PortForward', request: { podSandboxId, port: [...ports] }, options, subject: podSandboxId } as const;
    return this.call(call, (wire) => requireId('PortForward', 'streaming URL', wire.url));
  }

  /** The kubelet's: a timeout given is the call's deadline, else the client's default (remote_runtime.go). */
  async checkpointContainer(request: { readonly containerId: string; readonly location: string; readonly timeoutSeconds?: number }, options?: CallOptions): Promise<void> {
    requireArgument('CheckpointContainer', 'container ID', request.containerId);
    const timeout = Math.max(0, Math.floor(request.timeoutSeconds ?? 0));
    const wire = { containerId: request.containerId, location: request.location, timeout: String(timeout) };
    const deadline = timeout > 0 ? { timeoutMs: timeout * 1000 } : {};
    const call = { method: 'CheckpointContainer', request: wire, options: { ...options, ...deadline }, subject: request.containerId } as const;
    await this.call(call, () => undefined);
  }

  listContainerStats(options?: CallOptions): Promise<ContainerStats[]> {
    const call = { method: 'ListContainerStats', request: { filter: {} }, options } as const;
    return this.call(call, (wire) => wire.stats.flatMap((s) => containerStatsFromWire(s) ?? []));
  }

  /** Sends `call` with its deadline and converts the response, typed by method (`wire.ts`). */
  private call<M extends RuntimeMethod, R>(call: RuntimeCall<M>, convert: (wire: RuntimeResponses[M]) => R): Promise<R> {
    const base = call.options?.timeoutMs ?? this.options.defaultTimeoutMs;
    return this.options.transport.call(
      {
        service: 'RuntimeService',
        method: call.method,
        request: call.request,
        timeoutMs: base + (call.extraTimeoutMs ?? 0),
        subject: call.subject,
        ...(call.options?.signal === undefined ? {} : { signal: call.options.signal }),
      },
      // The loader options and api.proto guarantee this shape for method M (see wire.ts).
      (wire) => convert(wire as RuntimeResponses[M]),
    );
  }
}
