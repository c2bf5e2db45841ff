/**
 * The executor: performs a `PodActions` plan against the runtime in numbered steps, stopping at the
 * first failure (the next reconcile retries from what the runtime then reports), as the kubelet's
 * `SyncPod` does:
 *
 *   1. kill the pod (every container, then every sandbox) when the plan says so;
 *   2. kill the containers the plan names;
 *   3. prepare volumes and create the sandbox, when needed;
 *   4. for each container to start: ensure its image, build its config, create it, start it.
 *
 * It never decides anything: every choice comes from the plan.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ImageService, PodSandboxConfig, RuntimeService } from '../cri/types.js';
import { prepareContainerMounts, type PreparedVolumes, type VolumeManager } from './volumes/index.js';
import type { KeyValue, Mount } from '../cri/types.js';
import type { ContainerToStart, PodActions } from './compute-pod-actions.js';
import { buildContainerConfig } from './container-config.js';
import { resolveContainerEnv, type EnvSourceApi } from './container-env.js';
import { containerFieldPath, type EventRecorder } from './event-recorder.js';
import type { ImagePuller } from './image-puller.js';
import type { ObservedPod } from './observed-pod.js';
import { buildSandboxConfig, podGracePeriodSeconds } from './sandbox-config.js';
import { ContainerStartError, PodSetupError, errorMessage } from './sync-errors.js';
import { mkdir } from 'node:fs/promises';

export interface ExecutorOptions {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly puller: ImagePuller;
  readonly volumes: VolumeManager;
  readonly envApi: EnvSourceApi;
  readonly events: EventRecorder;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly podLogDir: string;
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  readonly logger: Logger;
}

/** What a kill needs: the pod (for events) and how long containers get to stop. */
export interface KillRequest {
  readonly pod: V1Pod | undefined;
  readonly observed: ObservedPod;
  readonly gracePeriodSeconds: number;
  readonly reason: string;
}

export class PodActionsExecutor {
  constructor(private readonly options: ExecutorOptions) {}

  /** Performs the plan. Throws the first failure (`ContainerStartError`, `PodSetupError`, CRI errors). */
  async execute(pod: V1Pod, plan: PodActions, observed: ObservedPod): Promise<void> {
    // Step 1: kill the pod.
    if (plan.killPod) {
      await this.killPod({ pod, observed, gracePeriodSeconds: podGracePeriodSeconds(pod), reason: plan.killPodReason });
      if (!plan.createSandbox) return;
    }
    // Step 2: kill the containers the plan names.
    await Promise.all(plan.containersToKill.map((c) => this.killContainer(pod, c.id, { name: c.name, reason: c.reason, gracePeriodSeconds: podGracePeriodSeconds(pod) })));
    if (!plan.createSandbox && plan.containersToStart.length === 0) return;
    // Step 3: volumes (refreshed on every sync that starts something) and the sandbox.
    const prepared = await this.prepareVolumes(pod);
    const sandboxConfig = buildSandboxConfig(pod, { nodeName: this.options.nodeName, podLogDir: this.options.podLogDir, attempt: plan.sandboxAttempt });
    const sandbox = plan.createSandbox || plan.sandboxId === undefined ? await this.createSandbox(pod, sandboxConfig) : { id: plan.sandboxId, ips: podIpsOf(observed) };
    // Step 4: containers, in spec order.
    for (const target of plan.containersToStart) {
      await this.startContainer({ pod, target, sandboxId: sandbox.id, sandboxConfig, prepared, podIps: sandbox.ips });
    }
  }

  /** Stops every container (in parallel, each within the grace period), then every sandbox. */
  async killPod(request: KillRequest): Promise<void> {
    const { pod, observed } = request;
    const live = observed.containers.filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED' || c.state === 'CONTAINER_UNKNOWN');
    await Promise.all(live.map((c) => this.killContainer(pod, c.id, { name: c.name, reason: request.reason, gracePeriodSeconds: request.gracePeriodSeconds })));
    for (const sandbox of observed.sandboxes.filter((s) => s.state === 'SANDBOX_READY')) {
      await this.options.runtime.stopPodSandbox(sandbox.id);
    }
  }

  /** Removes every sandbox of the pod (which removes its containers) after it was killed. */
  async removePod(observed: ObservedPod): Promise<void> {
    for (const container of observed.containers) await this.options.runtime.removeContainer(container.id);
    for (const sandbox of observed.sandboxes) await this.options.runtime.removePodSandbox(sandbox.id);
  }

  private async killContainer(pod: V1Pod | undefined, id: string, how: { name: string; reason: string; gracePeriodSeconds: number }): Promise<void> {
    if (pod !== undefined) {
      this.options.events.record(pod, { type: 'Normal', reason: 'Killing', message: `Stopping container ${how.name}`, fieldPath: containerFieldPath(pod, how.name) });
    }
    this.options.logger.info({ containerId: id, container: how.name, reason: how.reason, gracePeriodSeconds: how.gracePeriodSeconds }, 'stopping container');
    await this.options.runtime.stopContainer(id, how.gracePeriodSeconds);
  }

  private async prepareVolumes(pod: V1Pod): Promise<PreparedVolumes> {
    try {
      return await this.options.volumes.prepare(pod);
    } catch (error) {
      const message = `MountVolume.SetUp failed: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedMount', message });
      throw new PodSetupError('FailedMount', message, { cause: error });
    }
  }

  private async createSandbox(pod: V1Pod, config: PodSandboxConfig): Promise<{ id: string; ips: string[] }> {
    try {
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
      const id = await this.options.runtime.runPodSandbox(config, pod.spec?.runtimeClassName ?? '');
      const status = await this.options.runtime.podSandboxStatus(id);
      const ip = status.network?.ip ?? '';
      return { id, ips: ip === '' ? [] : [ip, ...(status.network?.additionalIps ?? [])] };
    } catch (error) {
      const message = `Failed to create pod sandbox: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedCreatePodSandBox', message });
      throw new PodSetupError('FailedCreatePodSandBox', message, { cause: error });
    }
  }

  private async startContainer(request: StartRequest): Promise<void> {
    const { pod, target } = request;
    const container = pod.spec?.containers[target.index];
    if (container === undefined) return;
    const fieldPath = containerFieldPath(pod, container.name);
    const imageRef = await this.options.puller.ensureImage(pod, container);
    const { env, mounts } = await this.configStep(pod, container.name, async () => {
      const env = await resolveContainerEnv({
        pod,
        container,
        api: this.options.envApi,
        podIps: request.podIps,
        nodeIp: this.options.nodeIp,
        nodeAllocatable: this.options.nodeAllocatable,
      });
      return { env, mounts: await this.mountsOf(request, container.name, env) };
    });
    const config = buildContainerConfig({ pod, container, kind: 'regular', nodeName: this.options.nodeName, restartCount: target.restartCount, imageRef, env, mounts });
    const id = await this.runtimeStep(pod, container.name, 'CreateContainerError', () => this.options.runtime.createContainer(request.sandboxId, config, request.sandboxConfig));
    this.options.events.record(pod, { type: 'Normal', reason: 'Created', message: `Created container ${container.name}`, fieldPath });
    await this.runtimeStep(pod, container.name, 'RunContainerError', () => this.options.runtime.startContainer(id));
    this.options.events.record(pod, { type: 'Normal', reason: 'Started', message: `Started container ${container.name}`, fieldPath });
  }

  private async mountsOf(request: StartRequest, name: string, env: readonly KeyValue[]): Promise<Mount[]> {
    const container = request.pod.spec?.containers.find((c) => c.name === name);
    if (container === undefined) return [];
    try {
      return await prepareContainerMounts(container, request.prepared, { env: Object.fromEntries(env.map((e) => [e.key, e.value])) });
    } catch (error) {
      throw new ContainerStartError(name, 'CreateContainerConfigError', errorMessage(error), { cause: error });
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

  private async runtimeStep<T>(pod: V1Pod, name: string, reason: 'CreateContainerError' | 'RunContainerError', step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      const message = `Error: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'Failed', message, fieldPath: containerFieldPath(pod, name) });
      throw new ContainerStartError(name, reason, errorMessage(error), { cause: error });
    }
  }
}

interface StartRequest {
  readonly pod: V1Pod;
  readonly target: ContainerToStart;
  readonly sandboxId: string;
  readonly sandboxConfig: PodSandboxConfig;
  readonly prepared: PreparedVolumes;
  readonly podIps: readonly string[];
}

function podIpsOf(observed: ObservedPod): string[] {
  const sandbox = observed.sandboxes[0];
  return sandbox === undefined || sandbox.ip === '' ? [] : [sandbox.ip, ...sandbox.additionalIps];
}
