/**
 * The executor: performs a `PodActions` plan against the runtime in numbered steps, as the
 * kubelet's `SyncPod` does:
 *
 *   1. kill the pod (app containers, then sidecars, then sandboxes) when the plan says so;
 *   2. kill the containers the plan names;
 *   3. prepare volumes and create the sandbox, when needed;
 *   4. start the containers the plan names: init containers strictly in order (the first that
 *      cannot start ends the step), app containers each on its own (one that cannot start does not
 *      hold back the others).
 *
 * Steps 1–3 stop at the first failure (thrown); the next reconcile retries from what the runtime
 * then reports. Containers that could not start are returned with their kubelet reason. The
 * executor never decides anything: every choice comes from the plan.
 */
import { mkdir } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PodSandboxConfig, RuntimeService } from '../cri/types.js';
import type { Clock } from '../util/clock.js';
import type { PodActions } from './compute-pod-actions.js';
import type { EnvSourceApi } from './container-env.js';
import type { EventRecorder } from './events/event-recorder.js';
import type { ImagePuller } from './images/image-puller.js';
import { PodKiller, type KillRequest } from './kill-pod.js';
import type { ObservedPod } from './observed-pod.js';
import type { RestartBackoff } from './restart-backoff.js';
import { buildSandboxConfig } from './sandbox-config.js';
import { ContainerStarter } from './start-container.js';
import { ContainerStartError, PodSetupError, errorMessage, isContainerStartError } from './sync-errors.js';
import type { PreparedVolumes, VolumeManager } from './volumes/index.js';

export type { KillRequest } from './kill-pod.js';

export interface ExecutorOptions {
  readonly runtime: RuntimeService;
  readonly puller: ImagePuller;
  readonly volumes: VolumeManager;
  readonly envApi: EnvSourceApi;
  readonly events: EventRecorder;
  readonly restartBackoff: RestartBackoff;
  readonly clock: Clock;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly podLogDir: string;
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  readonly rootDir: string;
  readonly logger: Logger;
}

/** What happened to the containers the plan asked to start. */
export interface ExecuteResult {
  /** Containers that could not start, with the kubelet's reason. */
  readonly failures: readonly ContainerStartError[];
}

export class PodActionsExecutor {
  private readonly killer: PodKiller;
  private readonly starter: ContainerStarter;
  /**
   * The last volumes prepared for each pod that has a sandbox. When refreshing them fails (the API
   * server is unreachable, so the token or a configmap cannot be fetched), containers of a pod
   * whose volumes are already on disk still (re)start from them, as the kubelet's mounted volumes
   * stay usable when a refresh fails. Dropped when the pod is removed.
   */
  private readonly prepared = new Map<string, PreparedVolumes>();

  constructor(private readonly options: ExecutorOptions) {
    this.killer = new PodKiller(options);
    this.starter = new ContainerStarter(options);
  }

  /** Performs the plan. Throws when the pod could not be killed or set up; returns container start failures. */
  async execute(pod: V1Pod, plan: PodActions, observed: ObservedPod, gracePeriodSeconds: number): Promise<ExecuteResult> {
    // Step 1: kill the pod.
    if (plan.killPod) {
      await this.killPod({ pod, observed, gracePeriodSeconds, reason: plan.killPodReason });
      if (!plan.createSandbox) return { failures: [] };
    }
    // Step 2: kill the containers the plan names.
    const byId = new Map(observed.containers.map((c) => [c.id, c]));
    await Promise.all(
      plan.containersToKill.flatMap((k) => {
        const container = byId.get(k.id);
        return container === undefined ? [] : [this.killer.stop({ pod, reason: k.reason }, container, gracePeriodSeconds)];
      }),
    );
    if (!plan.createSandbox && plan.containersToStart.length === 0) return { failures: [] };
    // Step 3: volumes (refreshed on every sync that starts something) and the sandbox.
    const prepared = await this.prepareVolumes(pod, plan.createSandbox);
    const sandboxConfig = buildSandboxConfig(pod, { nodeName: this.options.nodeName, podLogDir: this.options.podLogDir, attempt: plan.sandboxAttempt });
    const sandbox = plan.createSandbox || plan.sandboxId === undefined ? await this.createSandbox(pod, sandboxConfig) : { id: plan.sandboxId, ips: podIpsOf(observed) };
    // Step 4: containers.
    return this.startContainers({ pod, plan, observed, sandboxId: sandbox.id, sandboxConfig, prepared, podIps: sandbox.ips });
  }

  /** Stops the pod's containers (app containers, then sidecars) and its sandboxes. */
  async killPod(request: KillRequest): Promise<void> {
    await this.killer.killPod(request);
  }

  /** Removes every sandbox of the pod (which removes its containers) after it was killed. */
  async removePod(observed: ObservedPod): Promise<void> {
    this.prepared.delete(observed.uid);
    for (const container of observed.containers) await this.options.runtime.removeContainer(container.id);
    for (const sandbox of observed.sandboxes) await this.options.runtime.removePodSandbox(sandbox.id);
  }

  private async startContainers(s: {
    pod: V1Pod;
    plan: PodActions;
    observed: ObservedPod;
    sandboxId: string;
    sandboxConfig: PodSandboxConfig;
    prepared: PreparedVolumes;
    podIps: readonly string[];
  }): Promise<ExecuteResult> {
    const failures: ContainerStartError[] = [];
    for (const target of s.plan.containersToStart) {
      try {
        await this.starter.start({ ...s, target });
      } catch (error) {
        if (!isContainerStartError(error)) throw error;
        failures.push(error);
        // Init containers run strictly in order: nothing after one that could not start.
        if (target.kind === 'init') break;
      }
    }
    return { failures };
  }

  private async prepareVolumes(pod: V1Pod, newSandbox: boolean): Promise<PreparedVolumes> {
    const uid = pod.metadata?.uid ?? '';
    try {
      const prepared = await this.options.volumes.prepare(pod);
      this.prepared.set(uid, prepared);
      return prepared;
    } catch (error) {
      const message = `MountVolume.SetUp failed: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedMount', message });
      const previous = this.prepared.get(uid);
      // A new sandbox starts from scratch; an existing one keeps what it has on disk.
      if (previous !== undefined && !newSandbox) {
        this.options.logger.warn({ podUID: uid, err: error }, 'volume refresh failed; starting containers from the volumes already prepared');
        return previous;
      }
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
}

function podIpsOf(observed: ObservedPod): string[] {
  const sandbox = observed.sandboxes[0];
  return sandbox === undefined || sandbox.ip === '' ? [] : [sandbox.ip, ...sandbox.additionalIps];
}
