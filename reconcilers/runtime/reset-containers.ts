/**
 * Carrying out the in-place restart of a whole pod (`PodActions.containersToReset`), as the
 * kubelet's SyncPod removes its `ContainersToReset`:
 *
 * - one container after the other, in the plan's order, stopping at the first failure (thrown: the
 *   next run finds what is left, and the pod's AllContainersRestarting condition, still True,
 *   makes it go on);
 * - a container that has not exited is stopped first with a grace period of 0: no preStop hook, the
 *   runtime's minimal shutdown window, and the kubelet's `Killing` event, whose message is then
 *   the kubelet's literal "killing";
 * - then it is removed from the runtime; its log files and its log link stay, as the kubelet
 *   removes these containers keeping their logs: the runs before the restart can still be read,
 *   and the new instances count their restarts on from them.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimeService } from '../../cri/types.js';
import type { ObservedPod } from '../model/observed-pod.js';
import type { PodKiller } from './kill-pod.js';
import type { ContainerToReset } from './pod-actions.js';

/** The `Killing` event message of a container stopped for an in-place restart (the kubelet's `killContainer(…, "killing", …)`). */
export const RESET_KILL_EVENT_MESSAGE = 'killing';

export interface ResetDeps {
  readonly runtime: RuntimeService;
  readonly killer: PodKiller;
  readonly logger: Logger;
}

export interface ResetRequest {
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  readonly resets: readonly ContainerToReset[];
  /** The pod's primary IP (an httpGet hook's default host; no hook runs with grace 0, but the stop request carries it). */
  readonly podIp: string;
  readonly signal?: AbortSignal | undefined;
}

/** Stops (grace 0) and removes each container of `request.resets` in order; throws at the first failure. */
export async function resetContainers(deps: ResetDeps, request: ResetRequest): Promise<void> {
  const { pod, signal } = request;
  const options = signal === undefined ? {} : { signal };
  const byId = new Map(request.observed.containers.map((c) => [c.id, c]));
  for (const reset of request.resets) {
    signal?.throwIfAborted();
    const container = byId.get(reset.id);
    if (reset.kill && container !== undefined) {
      await deps.killer.stop({ pod, reason: reset.reason, eventMessage: RESET_KILL_EVENT_MESSAGE, podIp: request.podIp, ...options }, container, 0);
    }
    await deps.runtime.removeContainer(reset.id, options);
    deps.logger.info({ podUID: request.observed.uid, containerId: reset.id, container: reset.name, reason: reset.reason }, 'removed container: all containers of the pod restart');
  }
}
