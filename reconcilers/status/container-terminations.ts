/**
 * The kubelet's `kubelet_terminated_containers_total`: its status manager counts a container once,
 * when a status it is handed shows the container terminated and the status it replaces (its newest,
 * else the API object's) did not. Here the same comparison sits in front of the status manager,
 * where every status of a pod is handed over.
 */
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerTypeLabel } from '../runtime/start-container.js';
import type { StatusWriter } from './status-manager.js';

/** One container that turned terminated. */
export interface ContainerTermination {
  readonly containerType: ContainerTypeLabel;
  readonly exitCode: number;
  readonly reason: string;
}

/** Receives each container termination; must not throw. */
export interface ContainerTerminationMetrics {
  containerTerminated(termination: ContainerTermination): void;
}

/** The containers terminated in `next` that were not in `previous` (absent there: new). Pure. */
export function newTerminations(previous: V1PodStatus | undefined, next: V1PodStatus): ContainerTermination[] {
  const lists: readonly (readonly [ContainerTypeLabel, (s: V1PodStatus | undefined) => V1ContainerStatus[] | undefined])[] = [
    ['init_container', (s) => s?.initContainerStatuses],
    ['container', (s) => s?.containerStatuses],
    ['ephemeral_container', (s) => s?.ephemeralContainerStatuses],
  ];
  return lists.flatMap(([containerType, of]) => {
    const before = new Map((of(previous) ?? []).map((c) => [c.name, c]));
    return (of(next) ?? []).flatMap((c) => {
      const terminated = c.state?.terminated;
      if (terminated === undefined || before.get(c.name)?.state?.terminated !== undefined) return [];
      return [{ containerType, exitCode: terminated.exitCode, reason: terminated.reason ?? '' }];
    });
  });
}

/** `writer`, counting each container termination in the statuses handed over. */
export function countContainerTerminations(writer: StatusWriter & { podStatus(uid: string): V1PodStatus | undefined }, metrics: ContainerTerminationMetrics): StatusWriter & { podStatus(uid: string): V1PodStatus | undefined } {
  return {
    setPodStatus: (pod: V1Pod, status: V1PodStatus) => {
      const uid = pod.metadata?.uid ?? '';
      for (const termination of newTerminations(writer.podStatus(uid) ?? pod.status, status)) metrics.containerTerminated(termination);
      writer.setPodStatus(pod, status);
    },
    deletePod: (pod) => writer.deletePod(pod),
    forget: (uid) => { writer.forget(uid); },
    podStatus: (uid) => writer.podStatus(uid),
  };
}
