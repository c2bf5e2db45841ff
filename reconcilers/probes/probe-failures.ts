/**
 * Liveness and startup failures waiting to be acted on (the kubelet's liveness and startup results
 * managers, failure side): the prober records that a container instance failed, the next reconcile
 * reads it through `computePodActions` and kills the container. Keyed by runtime container ID, so a
 * restarted container starts clean. A per-pod manager on the pod lifecycle.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodKey } from '../../util/pod-key.js';
import type { ProbeFailure, ProbeVerdicts } from './probe-verdicts.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { ObservedPod } from '../model/observed-pod.js';
import type { ContainerProbeResult } from './container-readiness.js';

export class ProbeFailures implements PodLifecycleObserver {
  private readonly byPod = new Map<string, Map<string, ProbeFailure>>();

  record(uid: string, containerId: string, failure: ProbeFailure): void {
    const pod = this.byPod.get(uid) ?? new Map<string, ProbeFailure>();
    pod.set(containerId, failure);
    this.byPod.set(uid, pod);
  }

  clear(uid: string, containerId: string): void {
    const pod = this.byPod.get(uid);
    pod?.delete(containerId);
    if (pod?.size === 0) this.byPod.delete(uid);
  }

  /** Drops failures of container instances that no longer exist. */
  retainOnly(uid: string, containerIds: ReadonlySet<string>): void {
    const pod = this.byPod.get(uid);
    if (pod === undefined) return;
    for (const id of pod.keys()) if (!containerIds.has(id)) pod.delete(id);
    if (pod.size === 0) this.byPod.delete(uid);
  }

  of(uid: string): ReadonlyMap<string, ProbeFailure> {
    return this.byPod.get(uid) ?? new Map();
  }

  /** Pods with a recorded failure. */
  size(): number {
    return this.byPod.size;
  }

  podForgotten(key: PodKey): void {
    this.byPod.delete(key.uid);
  }
}

/**
 * What the probers say about a pod's running containers, as `computePodActions` takes it: the
 * recorded failures of instances that still exist, and the running containers whose startup probe
 * has not succeeded (a sidecar among them holds back what follows it).
 */
export function probeVerdicts(pod: V1Pod, observed: ObservedPod, failures: ReadonlyMap<string, ProbeFailure>, results: ReadonlyMap<string, ContainerProbeResult>): ProbeVerdicts {
  const withStartupProbe = new Set([...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].filter((c) => c.startupProbe !== undefined).map((c) => c.name));
  const live = observed.containers.filter((c) => c.state === 'CONTAINER_RUNNING');
  return {
    failures: new Map([...failures].filter(([id]) => live.some((c) => c.id === id))),
    notStarted: new Set(live.filter((c) => withStartupProbe.has(c.name) && results.get(c.id)?.started !== true).map((c) => c.id)),
  };
}
