/**
 * Stopping a pod's containers as the kubelet does (killPodWithSyncResult / killContainersWithSyncResult):
 *
 * - Every container is told to stop at once, each with the pod's grace period: its `Killing` event
 *   and its preStop hook start together. App containers (and init containers that are still
 *   running) are then sent SIGTERM, and SIGKILL when the grace period runs out (the runtime does
 *   both within `StopContainer`).
 * - A sidecar is sent its signal only once the app containers and the sidecars after it have
 *   stopped (`termination-order.ts`), with what remains of its grace period (at least 2 s), so the
 *   sidecars serve the app containers to the end and stop in reverse spec order; their preStop
 *   hooks, started with everything else, run simultaneously.
 * - A grace period can only shrink: while a container is stopping, `currentGracePeriodSeconds` is
 *   read again every half second, and when it is shorter than the one the stop was given, the
 *   container is stopped again at once with the shorter one (at least 2 s), as the kubelet's pod
 *   worker cancels the kill in progress and kills again with the new grace period. The runtime
 *   kills at whichever deadline comes first.
 * - A container that was created but never started (the agent died between CreateContainer and
 *   StartContainer) is removed instead: the runtime's StopContainer does nothing to a container
 *   that is not running (containerd returns at once), so it would stay "created" forever and the
 *   pod could never finish terminating. It never ran, so it has no logs or status worth keeping.
 * - A running container's preStop hook runs first (after the `Killing` event), bounded by its grace
 *   period, and the time it took comes off the grace period StopContainer gets: `hooks/pre-stop.ts`.
 *   StopContainer never gets less than 2 s (the kubelet's minimal shutdown window), hook or not.
 * - Then every ready sandbox is stopped (its network torn down).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions, RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop } from '../../util/periodic-loop.js';
import { TerminationOrder } from './termination-order.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import { runPreStopHook } from '../hooks/pre-stop.js';
import type { LifecycleMetrics } from '../hooks/run-hook.js';
import { isLiveContainer, type ObservedContainer, type ObservedPod } from '../model/observed-pod.js';

/** What `stop` needs of a container: which one, and whether it runs. */
export type ContainerToStop = Pick<ObservedContainer, 'id' | 'name' | 'state'>;

/** One container stop: `KillRequest` without the observation, plus the event and the pod IP. */
export type StopRequest = Pick<KillRequest, 'pod' | 'reason' | 'currentGracePeriodSeconds' | 'signal'> & {
  readonly eventMessage?: string;
  /** The pod's primary IP: the default host of an httpGet preStop hook. */
  readonly podIp?: string;
};

/** The kubelet's `minimumGracePeriodInSeconds`: the least StopContainer ever gets. */
const MIN_STOP_GRACE_SECONDS = 2;
const SHRINK_POLL_MS = 500;

export interface KillRequest {
  /** The pod, for events and to tell sidecars apart; undefined for a pod the API no longer has. */
  readonly pod: V1Pod | undefined;
  readonly observed: ObservedPod;
  readonly gracePeriodSeconds: number;
  /** Re-read while stopping: a shorter value than `gracePeriodSeconds` cuts the wait short. */
  readonly currentGracePeriodSeconds?: () => number;
  readonly reason: string;
  /** Cancels the runtime calls (the run lost its lock, or the agent is stopping). */
  readonly signal?: AbortSignal;
}

export interface PodKillerOptions {
  readonly runtime: RuntimeService;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Counts HTTPS lifecycle hooks that fell back to HTTP; absent: not counted. */
  readonly lifecycleMetrics?: LifecycleMetrics;
}

export class PodKiller {
  constructor(private readonly options: PodKillerOptions) {}

  /** Stops every container (all at once; each sidecar's signal in its turn), then every ready sandbox. */
  async killPod(request: KillRequest): Promise<void> {
    const live = request.observed.containers.filter(isLiveContainer);
    const order = new TerminationOrder(request.pod, live.map((c) => c.name), this.options.clock);
    const stopRequest: StopRequest = { ...request, podIp: readyPodIp(request.observed) };
    await Promise.all(live.map(async (c) => {
      try {
        await this.stop(stopRequest, c, request.gracePeriodSeconds, (remaining) => order.waitForTurn(c.name, remaining));
      } finally {
        order.stopped(c.name);
      }
    }));
    for (const sandbox of request.observed.sandboxes.filter((s) => s.state === 'SANDBOX_READY')) {
      await this.options.runtime.stopPodSandbox(sandbox.id, callOptions(request));
    }
  }

  /**
   * Stops one container with `graceSeconds` (its preStop hook first, then `turn`: the wait for the
   * containers it must outlive, whose seconds come off the rest), or sooner if the grace period
   * shrinks meanwhile; a container that never started is removed (see the file header).
   */
  async stop(request: StopRequest, container: ContainerToStop, graceSeconds: number, turn?: (remainingSeconds: number) => Promise<number>): Promise<void> {
    const { pod } = request;
    if (container.state === 'CONTAINER_CREATED') {
      this.options.logger.info({ containerId: container.id, container: container.name, reason: request.reason }, 'removing container that never started');
      await this.options.runtime.removeContainer(container.id, callOptions(request));
      return;
    }
    if (pod !== undefined) {
      const message = request.eventMessage ?? `Stopping container ${container.name}`;
      this.options.events.record(pod, { type: 'Normal', reason: 'Killing', message, fieldPath: containerFieldPath(pod, container.name) });
    }
    // As the kubelet: "always give containers a minimal shutdown window to avoid unnecessary
    // SIGKILLs" — StopContainer never gets less than 2 s, hook or not, whatever the grace period.
    const afterHook = await this.preStop(request, container, graceSeconds);
    // A sidecar's signal waits for its turn (the app containers and later sidecars stopped); the wait comes off its grace.
    const remaining = turn === undefined || afterHook <= 0 ? afterHook : afterHook - (await turn(afterHook));
    const timeoutSeconds = Math.max(MIN_STOP_GRACE_SECONDS, remaining);
    this.options.logger.info({ containerId: container.id, container: container.name, reason: request.reason, gracePeriodSeconds: timeoutSeconds }, 'stopping container');
    const watcher = this.watchShrink({ container, graceSeconds, current: request.currentGracePeriodSeconds });
    try {
      await this.options.runtime.stopContainer(container.id, timeoutSeconds, callOptions(request));
    } finally {
      watcher.cancel();
    }
  }

  /** Runs the preStop hook of a running container of a known pod; returns the grace period left for StopContainer. */
  private async preStop(request: StopRequest, container: ContainerToStop, graceSeconds: number): Promise<number> {
    if (request.pod === undefined || container.state !== 'CONTAINER_RUNNING') return graceSeconds;
    return runPreStopHook(this.options, {
      pod: request.pod,
      containerName: container.name,
      containerId: container.id,
      podIp: request.podIp === undefined || request.podIp === '' ? (request.pod.status?.podIP ?? '') : request.podIp,
      graceSeconds,
      currentGraceSeconds: request.currentGracePeriodSeconds,
      signal: request.signal,
    });
  }

  /**
   * Re-reads the grace period every half second on the one periodic-loop primitive while the
   * container stops; each time it is shorter than the last one given, stops the container again
   * with it (at least 2 s; without the run's signal: the stop must happen).
   */
  private watchShrink(w: { container: ContainerToStop; graceSeconds: number; current: (() => number) | undefined }): { cancel(): void } {
    const { clock, runtime, logger } = this.options;
    const current = w.current;
    if (current === undefined) return { cancel: () => undefined };
    let given = w.graceSeconds;
    const loop = createPeriodicLoop({
      name: 'grace-shrink',
      periodMs: SHRINK_POLL_MS,
      firstRun: 'after-period',
      clock,
      logger,
      run: () => {
        const grace = current();
        if (grace >= given) return;
        given = grace;
        const timeoutSeconds = Math.max(MIN_STOP_GRACE_SECONDS, grace);
        logger.info({ containerId: w.container.id, gracePeriodSeconds: timeoutSeconds }, 'grace period shortened: stopping the container again with it');
        runtime.stopContainer(w.container.id, timeoutSeconds).catch((error: unknown) => {
          logger.warn({ err: error, containerId: w.container.id }, 'stop after a shortened grace period failed');
        });
      },
    });
    loop.start();
    return {
      cancel: () => {
        void loop.stop();
      },
    };
  }
}

/** The primary IP of the pod's ready sandbox; empty when none (host network, or no sandbox). */
function readyPodIp(observed: ObservedPod): string {
  return observed.sandboxes.find((s) => s.state === 'SANDBOX_READY')?.ip ?? '';
}

function callOptions(request: Pick<KillRequest, 'signal'>): CallOptions {
  return request.signal === undefined ? {} : { signal: request.signal };
}
