/**
 * The executor: performs a `PodActions` plan against the runtime in numbered steps, as the
 * kubelet's `SyncPod` does:
 *
 *   1. kill the pod (app containers, then sidecars, then sandboxes) when the plan says so;
 *   2. kill the containers the plan names, or remove every container for an in-place restart of
 *      the whole pod (stopped at once, one after the other: `reset-containers.ts`);
 *   3. prepare volumes and create the sandbox, when needed (a sync that starts nothing refreshes a
 *      running pod's configMap/secret/projected/downwardAPI volumes instead: `volume-refresh.ts`);
 *   4. start the containers the plan names: init containers strictly in order (the first that
 *      cannot start ends the step), app containers each on its own (one that cannot start does not
 *      hold back the others).
 *
 * Steps 1–3 stop at the first failure (thrown); the next reconcile retries from what the runtime
 * then reports. Containers that could not start are returned with their kubelet reason. The
 * executor never decides anything: every choice comes from the plan.
 */
import type { LifecycleMetrics } from '../hooks/run-hook.js';
import { mkdir } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions, DnsConfig, PodSandboxConfig, RuntimeService, UserNamespace } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { PodActions } from './pod-actions.js';
import type { EnvSourceApi } from '../container/container-env.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { ServiceLister } from '../container/service-env.js';
import type { ImagePuller } from '../images/image-puller.js';
import { hasImageVolumes, pullImageVolumes, type ImageVolumePulls } from './image-volumes.js';
import { PodKiller, type KillRequest } from './kill-pod.js';
import { resetContainers } from './reset-containers.js';
import type { ObservedPod } from '../model/observed-pod.js';
import type { RestartBackoff } from '../model/restart-backoff.js';
import { dynamicResourcesRefusal } from './runtime-support.js';
import { handlerUsernsSupport, type RuntimeFeatureReader } from './runtime-features.js';
import { HOST_USER_NAMESPACE, type UserNamespaceManager } from '../userns/userns-manager.js';
import { buildSandboxConfig, isFqdnTooLongError } from '../container/sandbox-config.js';
import type { PodDnsConfigurer } from '../dns/pod-dns-configurer.js';
import { ContainerStarter } from './start-container.js';
import { removeContainerLogs } from '../model/container-logs.js';
import { removeContainerLogLink } from '../model/container-log-links.js';
import type { ContainerSecuritySettings } from '../container/security-context.js';
import type { PodLifecycleObserver, PodStartEvents } from '../lifecycle/observer.js';
import { RunningVolumeRefresher } from '../volumes/volume-refresh.js';
import { ContainerStartError, PodSetupError, errorMessage, isCancellation, isContainerStartError } from '../model/sync-errors.js';
import { mountFailureMessages, type PreparedVolumes, type VolumeManager } from '../volumes/index.js';
import type { PodCgroupParent } from '../cgroups/pod-cgroups.js';
import { runtimeHandlerFor, type RuntimeHandlerLookup } from '../container/runtime-handlers.js';

export type { KillRequest } from './kill-pod.js';

export interface ExecutorOptions {
  readonly runtime: RuntimeService;
  readonly puller: ImagePuller;
  readonly volumes: VolumeManager;
  readonly envApi: EnvSourceApi;
  /** The node's cached services: every container's service variables. */
  readonly services: ServiceLister;
  readonly events: EventRecorder;
  readonly restartBackoff: RestartBackoff;
  readonly clock: Clock;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly podLogDir: string;
  /** Where each started container's log link goes; a removed container's goes with it. */
  readonly containerLogLinkDir: string;
  readonly nodeAllocatable: { readonly milliCpu: number; readonly memoryBytes: number };
  readonly rootDir: string;
  /** How containers are confined (seccomp, masked paths). */
  readonly security: ContainerSecuritySettings;
  readonly logger: Logger;
  /** Told about every sandbox and container this executor starts. */
  readonly lifecycle: PodStartEvents;
  /** Forms the sandbox's resolver configuration and each container's /etc/hosts. */
  readonly dns: PodDnsConfigurer;
  /** The pod's cgroup, made before the sandbox and named as its cgroup parent; none (the runtime's default) when absent. */
  readonly cgroups?: PodCgroupParent;
  /** Resolves the pod's RuntimeClass to the runtime handler its sandbox is created with. */
  readonly runtimeHandlers: RuntimeHandlerLookup;
  /** Counts HTTPS lifecycle hooks that fell back to HTTP; absent: not counted. */
  readonly lifecycleMetrics?: LifecycleMetrics;
  /** What the runtime supports per handler (user namespaces). */
  readonly runtimeFeatures: RuntimeFeatureReader;
  /** Gives `hostUsers: false` pods their ID ranges. */
  readonly userNamespaces: UserNamespaceManager;
  /** Counts sandboxes of user-namespaced pods and the runs that failed for them; absent: not counted. */
  readonly usernsMetrics?: UserNamespacedPodMetrics;
  /** Counts every sandbox created and every creation that failed; absent: not counted. */
  readonly startedPodMetrics?: StartedPodMetrics;
}

/** The kubelet's `started_pods_total` and `…_errors_total`, counted at SyncPod's sandbox step. */
export interface StartedPodMetrics {
  /** A sandbox is about to be created for a pod. */
  sandboxCreating(): void;
  /** Creating it failed (a cancellation, the pod being deleted meanwhile, is not a failure). */
  sandboxFailed(): void;
  /** One RunPodSandbox call and how long it took, failed or not, by the pod's runtime handler (`''`: the runtime's default). */
  sandboxRun(run: { readonly runtimeHandler: string; readonly seconds: number; readonly failed: boolean }): void;
}

/** The kubelet's `started_user_namespaced_pods_total` and `…_errors_total`. */
export interface UserNamespacedPodMetrics {
  /** A sandbox is being created for a `hostUsers: false` pod. */
  started(): void;
  /** That run failed (sandbox or containers). */
  failed(): void;
}

/** How one plan is carried out. */
export interface ExecuteOptions {
  /** The grace period of the containers the plan kills. */
  readonly gracePeriodSeconds: number;
  /** Cancels the run: every runtime call is cancelled and no further step starts. */
  readonly signal?: AbortSignal;
}

/** What happened to the containers the plan asked to start. */
export interface ExecuteResult {
  /** Containers that could not start, with the kubelet's reason. */
  readonly failures: readonly ContainerStartError[];
  /**
   * When the run reached step 4: the sandbox it started containers in (new or existing) and the
   * IDs of the containers it started there. With `observed`, every object the pod now has.
   */
  readonly started?: { readonly sandboxId: string; readonly containerIds: readonly string[] };
}

export class PodActionsExecutor implements PodLifecycleObserver {
  private readonly killer: PodKiller;
  private readonly starter: ContainerStarter;
  private readonly refresher: RunningVolumeRefresher;
  /**
   * The last volumes prepared for each pod that has a sandbox. When refreshing them fails (the API
   * server is unreachable, so the token or a configmap cannot be fetched), containers of a pod
   * whose volumes are already on disk still (re)start from them, as the kubelet's mounted volumes
   * stay usable when a refresh fails. Dropped when the pod is removed.
   */
  private readonly prepared = new Map<string, PreparedVolumes>();

  constructor(private readonly options: ExecutorOptions) {
    this.killer = new PodKiller(options);
    // The starter kills through the killer when a postStart hook fails (preStop and grace included).
    this.starter = new ContainerStarter(options, this.killer);
    this.refresher = new RunningVolumeRefresher(options);
  }

  /** Performs the plan. Throws when the pod could not be killed or set up, or the run was cancelled; returns container start failures. */
  async execute(pod: V1Pod, plan: PodActions, observed: ObservedPod, how: ExecuteOptions): Promise<ExecuteResult> {
    const metrics = this.options.usernsMetrics;
    // As the kubelet's SyncPod: counted when a sandbox is created for such a pod, failed when any step of that run fails.
    if (metrics === undefined || !plan.createSandbox || pod.spec?.hostUsers !== false) return this.executePlan(pod, plan, observed, how);
    metrics.started();
    try {
      const result = await this.executePlan(pod, plan, observed, how);
      if (result.failures.length > 0) metrics.failed();
      return result;
    } catch (error) {
      if (!isCancellation(error, how.signal)) metrics.failed();
      throw error;
    }
  }

  private async executePlan(pod: V1Pod, plan: PodActions, observed: ObservedPod, how: ExecuteOptions): Promise<ExecuteResult> {
    const { gracePeriodSeconds, signal } = how;
    // Step 1: kill the pod.
    if (plan.killPod) {
      await this.killPod({ pod, observed, gracePeriodSeconds, reason: plan.killPodReason, ...signalOf(signal) });
      if (!plan.createSandbox) return { failures: [] };
    }
    // Step 2: kill the containers the plan names.
    const byId = new Map(observed.containers.map((c) => [c.id, c]));
    await Promise.all(
      plan.containersToKill.flatMap((k) => {
        const container = byId.get(k.id);
        if (container === undefined) return [];
        // podIp: the default host of an httpGet preStop hook.
        const request = { pod, reason: k.reason, podIp: this.podIps(pod, sandboxIpsOf(observed))[0] ?? '', ...signalOf(signal), ...(k.eventMessage === undefined ? {} : { eventMessage: k.eventMessage }) };
        return [this.killer.stop(request, container, k.gracePeriodSeconds ?? gracePeriodSeconds)];
      }),
    );
    if (plan.containersToReset.length > 0) {
      const { runtime, logger } = this.options;
      await resetContainers({ runtime, killer: this.killer, logger }, { pod, observed, resets: plan.containersToReset, podIp: this.podIps(pod, sandboxIpsOf(observed))[0] ?? '', signal });
    }
    if (!plan.createSandbox && plan.containersToStart.length === 0) {
      // A running pod's configMap/secret/projected/downwardAPI files follow their sources.
      if (plan.sandboxId !== undefined) await this.refresher.refresh(pod, signal);
      return { failures: [] };
    }
    // Step 3: volumes (refreshed on every sync that starts something) and the sandbox.
    signal?.throwIfAborted();
    const prepared = await this.prepareVolumes(pod, plan.createSandbox, signal);
    // What this node cannot give fails here, where the kubelet's check fails: before any sandbox.
    if (plan.createSandbox) this.refuseUnsupported(pod);
    // The resolver configuration is formed on every sync that starts something, as the kubelet's
    // SyncPod regenerates the sandbox config (and its DNS warnings) each time.
    const dnsConfig = await this.sandboxDnsConfig(pod);
    // On every sync that starts something, as the kubelet's EnsureExists: containers join it too.
    const cgroupParent = await this.ensurePodCgroup(pod);
    const userNamespace = await this.userNamespace(pod, signal);
    const sandboxConfig = this.sandboxConfig(pod, plan.sandboxAttempt, { dnsConfig, cgroupParent, userNamespace });
    const sandbox = plan.createSandbox || plan.sandboxId === undefined ? await this.createSandbox(pod, sandboxConfig, signal) : { id: plan.sandboxId, ips: sandboxIpsOf(observed) };
    // Step 4: the image volumes' images (once for every container this sync starts), then containers.
    const imageVolumes = await this.pullImageVolumes(pod, signal);
    return this.startContainers({ pod, plan, observed, sandboxId: sandbox.id, sandboxConfig, prepared, imageVolumes, podIps: this.podIps(pod, sandbox.ips), signal });
  }

  /** Stops the pod's containers (app containers, then sidecars) and its sandboxes. */
  async killPod(request: KillRequest): Promise<void> {
    await this.killer.killPod(request);
  }

  /**
   * Removes every container (with its log link) and sandbox of the pod `key` after it was killed.
   * The log files stay until GC removes the pod's log directory.
   */
  async removePod(key: PodKey, observed: ObservedPod, signal?: AbortSignal): Promise<void> {
    const options: CallOptions = signalOf(signal);
    for (const container of observed.containers) {
      await this.options.runtime.removeContainer(container.id, options);
      await this.removeLogLink(key, container);
    }
    for (const sandbox of observed.sandboxes) await this.options.runtime.removePodSandbox(sandbox.id, options);
  }

  /**
   * Removes the exited containers of pod `key`, their log files and links; returns the pod without
   * them. For an evicted pod, as the kubelet's container deletor removes every dead container of a
   * pod once its eviction is synced.
   */
  async removeDeadContainers(key: PodKey, observed: ObservedPod, signal?: AbortSignal): Promise<ObservedPod> {
    const options: CallOptions = signalOf(signal);
    const dead = observed.containers.filter((c) => c.state === 'CONTAINER_EXITED');
    for (const container of dead) {
      await this.options.runtime.removeContainer(container.id, options);
      await this.removeLogLink(key, container);
      const logFiles = await removeContainerLogs(this.options.podLogDir, container.logPath ?? '');
      this.options.logger.info({ podUID: observed.uid, containerId: container.id, container: container.name, logFiles }, 'removed dead container of evicted pod');
    }
    return { ...observed, containers: observed.containers.filter((c) => c.state !== 'CONTAINER_EXITED') };
  }

  /**
   * A removed container's log link (the kubelet's removeContainerLog). One that cannot be removed
   * fails the run; its container being gone, container GC's link pass removes it once it can.
   */
  private async removeLogLink(key: PodKey, container: { readonly id: string; readonly name: string }): Promise<void> {
    await removeContainerLogLink(this.options.containerLogLinkDir, { podName: key.name, podNamespace: key.namespace, containerName: container.name, containerId: container.id });
  }

  /** Drops the volumes remembered for a pod that is gone. */
  podForgotten(key: PodKey): void {
    this.prepared.delete(key.uid);
    this.refresher.podForgotten(key);
  }

  /** Pods with prepared volumes remembered, and pods with a volume refresh remembered. */
  heldPods(): { readonly preparedVolumes: number; readonly volumeRefreshes: number } {
    return { preparedVolumes: this.prepared.size, volumeRefreshes: this.refresher.size() };
  }

  private async startContainers(s: {
    pod: V1Pod;
    plan: PodActions;
    observed: ObservedPod;
    sandboxId: string;
    sandboxConfig: PodSandboxConfig;
    prepared: PreparedVolumes;
    imageVolumes: ImageVolumePulls;
    podIps: readonly string[];
    signal: AbortSignal | undefined;
  }): Promise<ExecuteResult> {
    const failures: ContainerStartError[] = [];
    const containerIds: string[] = [];
    const key = podKeyOf(s.pod);
    for (const target of s.plan.containersToStart) {
      s.signal?.throwIfAborted();
      try {
        const started = await this.starter.start({ ...s, target });
        if (started === undefined) continue;
        containerIds.push(started.id);
        this.options.lifecycle.containerStarted(key, { name: target.name, id: started.id });
      } catch (error) {
        if (!isContainerStartError(error)) throw error;
        failures.push(error);
        // Init containers run strictly in order: nothing after one that could not start.
        if (target.kind === 'init') break;
      }
    }
    return { failures, started: { sandboxId: s.sandboxId, containerIds } };
  }

  /** The pod's image volumes pulled (the kubelet's getImageVolumes, with the pod's runtime handler). */
  private async pullImageVolumes(pod: V1Pod, signal: AbortSignal | undefined): Promise<ImageVolumePulls> {
    if (!hasImageVolumes(pod)) return new Map();
    const runtimeHandler = await runtimeHandlerFor(this.options.runtimeHandlers, pod.spec?.runtimeClassName, signal);
    return pullImageVolumes({ pod, puller: this.options.puller, runtimeHandler, signal });
  }

  private async prepareVolumes(pod: V1Pod, newSandbox: boolean, signal: AbortSignal | undefined): Promise<PreparedVolumes> {
    const uid = pod.metadata?.uid ?? '';
    try {
      const prepared = await this.options.volumes.prepare(pod, signal);
      this.prepared.set(uid, prepared);
      return prepared;
    } catch (error) {
      const messages = mountFailureMessages(error);
      for (const message of messages) this.options.events.record(pod, { type: 'Warning', reason: 'FailedMount', message });
      const previous = this.prepared.get(uid);
      // A new sandbox starts from scratch; an existing one keeps what it has on disk.
      if (previous !== undefined && !newSandbox) {
        this.options.logger.warn({ podUID: uid, err: error }, 'volume refresh failed; starting containers from the volumes already prepared');
        return previous;
      }
      throw new PodSetupError('FailedMount', messages.join('; '), { cause: error });
    }
  }

  /**
   * Resource claims (no DRA here: `FailedPrepareDynamicResources`) fail the sandbox step with the
   * kubelet's event, on every attempt; the pod stays Pending.
   */
  private refuseUnsupported(pod: V1Pod): void {
    const dra = dynamicResourcesRefusal(pod);
    if (dra !== undefined) {
      const message = `Failed to prepare dynamic resources: ${dra}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedPrepareDynamicResources', message });
      throw new PodSetupError('FailedPrepareDynamicResources', message);
    }
  }

  /**
   * The pod's user namespace, as the kubelet's NamespacesForPod gets it: the host's, or for
   * `hostUsers: false` the pod's range when its handler runs user namespaces. One that cannot be
   * given fails the sandbox config (`FailedCreatePodSandBox`), on every attempt.
   */
  private async userNamespace(pod: V1Pod, signal: AbortSignal | undefined): Promise<UserNamespace> {
    if (pod.spec?.hostUsers !== false) return HOST_USER_NAMESPACE;
    try {
      const handler = await runtimeHandlerFor(this.options.runtimeHandlers, pod.spec.runtimeClassName, signal);
      const support = handlerUsernsSupport(await this.options.runtimeFeatures.current(signalOf(signal)), handler);
      return await this.options.userNamespaces.userNamespaceFor(pod, handler, support);
    } catch (error) {
      if (isCancellation(error, signal)) throw error;
      throw this.sandboxConfigFailure(pod, error);
    }
  }

  /** The sandbox config; one that cannot be generated (an FQDN too long for the kernel) fails the sandbox step. */
  private sandboxConfig(pod: V1Pod, attempt: number, more: { dnsConfig: DnsConfig; cgroupParent: string | undefined; userNamespace: UserNamespace }): PodSandboxConfig {
    const { nodeName, podLogDir } = this.options;
    const parent = more.cgroupParent === undefined ? {} : { cgroupParent: more.cgroupParent };
    try {
      return buildSandboxConfig(pod, { nodeName, podLogDir, attempt, dnsConfig: more.dnsConfig, ...parent, userNamespace: more.userNamespace, clusterDomain: this.options.dns.clusterSettings().domain });
    } catch (error) {
      if (!isFqdnTooLongError(error)) throw error;
      throw this.sandboxConfigFailure(pod, error);
    }
  }

  /** The pod's IPs: its sandbox's; a host-network pod's are the node's (the runtime reports none). */
  private podIps(pod: V1Pod, sandboxIps: string[]): string[] {
    return sandboxIps.length === 0 && pod.spec?.hostNetwork === true ? [this.options.nodeIp] : sandboxIps;
  }

  /**
   * The kubelet's event and error for a sandbox config it could not generate: its event carries the
   * cause as it is ("Failed to create pod sandbox: %v" of the error), not the longer message it logs.
   */
  private sandboxConfigFailure(pod: V1Pod, error: unknown): PodSetupError {
    const message = `Failed to create pod sandbox: ${errorMessage(error)}`;
    this.options.events.record(pod, { type: 'Warning', reason: 'FailedCreatePodSandBox', message });
    return new PodSetupError('FailedCreatePodSandBox', message, { cause: error });
  }

  /** The pod's cgroup (made when missing); one that cannot be made fails the sandbox step with the kubelet's event. */
  private async ensurePodCgroup(pod: V1Pod): Promise<string | undefined> {
    if (this.options.cgroups === undefined) return undefined;
    try {
      return await this.options.cgroups.ensurePod(pod);
    } catch (error) {
      const message = `unable to ensure pod container exists: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedCreatePodContainer', message });
      throw new PodSetupError('FailedCreatePodContainer', message, { cause: error });
    }
  }

  /** The sandbox's resolver configuration; a host resolv.conf that cannot be used fails the sandbox step. */
  private async sandboxDnsConfig(pod: V1Pod): Promise<DnsConfig> {
    try {
      return await this.options.dns.sandboxDnsConfig(pod);
    } catch (error) {
      throw this.sandboxConfigFailure(pod, error);
    }
  }

  /** RunPodSandbox, timed by the pod's handler as the kubelet's instrumented runtime service times it. */
  private async runPodSandbox(config: PodSandboxConfig, handler: string, signal: AbortSignal | undefined): Promise<string> {
    const { clock, startedPodMetrics } = this.options;
    const startedMs = clock.now();
    let failed = true;
    try {
      const id = await this.options.runtime.runPodSandbox(config, handler, signalOf(signal));
      failed = false;
      return id;
    } finally {
      startedPodMetrics?.sandboxRun({ runtimeHandler: handler, seconds: Math.max(0, clock.now() - startedMs) / 1000, failed });
    }
  }

  private async createSandbox(pod: V1Pod, config: PodSandboxConfig, signal: AbortSignal | undefined): Promise<{ id: string; ips: string[] }> {
    this.options.startedPodMetrics?.sandboxCreating();
    try {
      // The RuntimeClass's handler, not its name: a class that does not exist fails this step.
      const handler = await runtimeHandlerFor(this.options.runtimeHandlers, pod.spec?.runtimeClassName, signal);
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
      const id = await this.runPodSandbox(config, handler, signal);
      this.options.lifecycle.sandboxStarted(podKeyOf(pod), id);
      const status = await this.options.runtime.podSandboxStatus(id, signalOf(signal));
      const ip = status.network?.ip ?? '';
      return { id, ips: ip === '' ? [] : [ip, ...(status.network?.additionalIps ?? [])] };
    } catch (error) {
      if (isCancellation(error, signal)) throw error;
      this.options.startedPodMetrics?.sandboxFailed();
      const message = `Failed to create pod sandbox: ${errorMessage(error)}`;
      this.options.events.record(pod, { type: 'Warning', reason: 'FailedCreatePodSandBox', message });
      throw new PodSetupError('FailedCreatePodSandBox', message, { cause: error });
    }
  }
}

function sandboxIpsOf(observed: ObservedPod): string[] {
  const sandbox = observed.sandboxes[0];
  return sandbox === undefined || sandbox.ip === '' ? [] : [sandbox.ip, ...sandbox.additionalIps];
}

function signalOf(signal: AbortSignal | undefined): CallOptions {
  return signal === undefined ? {} : { signal };
}
