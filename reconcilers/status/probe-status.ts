/**
 * How the probers' results show in a pod's status: the containers' `started` and `ready` flags,
 * and the readiness conditions recomputed from them (the status manager's narrow readiness path,
 * and full status generation).
 */
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isSidecar } from '../model/sidecar.js';
import { criContainerId, type ContainerProbeResult } from '../probes/container-readiness.js';
import { recomputeReadiness } from './pod-conditions.js';

/** The runtime container IDs a status reports as current (init and app containers). */
export function currentContainerIds(statuses: readonly V1ContainerStatus[]): Set<string> {
  return new Set(statuses.flatMap((s) => (s.containerID === undefined ? [] : [criContainerId(s.containerID)])));
}

/** Which probes a container has: without a result yet, a probed container is not started / not ready. */
export interface ContainerProbes {
  readonly startup: boolean;
  readonly readiness: boolean;
}

/** The probes a container spec declares. */
export function probesOf(spec: V1Container | undefined): ContainerProbes {
  return { startup: spec?.startupProbe !== undefined, readiness: spec?.readinessProbe !== undefined };
}

/**
 * `started` and `ready` of a container that probes may gate (an app container or a sidecar), from
 * its state, its probes and its recorded result, as the kubelet's prober manager reports them. Not
 * running: neither. Running: started when its startup probe succeeded, or when it has none; ready
 * when started and its readiness probe succeeded, or when it has none. A readiness probe that has
 * not produced a result yet counts as not succeeded, unless `keptReady`: the container was running
 * before the agent started and the pod was Ready (the kubelet's `setReadyStateOnKubeletRestart`).
 */
export function probedFlags(running: boolean, result: ContainerProbeResult | undefined, probes: ContainerProbes = { startup: false, readiness: false }, keptReady = false): { ready: boolean; started: boolean } {
  if (!running) return { ready: false, started: false };
  const started = result?.started ?? !probes.startup;
  return { started, ready: started && (result?.ready ?? (!probes.readiness || keptReady)) };
}

/** A container status with `ready`/`started` from its recorded result; unchanged when it has none. */
function withResult(status: V1ContainerStatus, results: ReadonlyMap<string, ContainerProbeResult>, spec: V1Container | undefined): V1ContainerStatus {
  const result = status.containerID === undefined ? undefined : results.get(criContainerId(status.containerID));
  if (result === undefined) return status;
  const flags = probedFlags(status.state?.running !== undefined, result, probesOf(spec));
  return flags.ready === status.ready && flags.started === status.started ? status : { ...status, ...flags };
}

/**
 * `status` with the recorded probe results applied to its app containers and sidecars (regular init
 * containers are ready once they succeeded, whatever a probe says), and ContainersReady / Ready
 * recomputed when a flag changed. Returns `status` itself when nothing changed.
 */
export function applyProbeResults(pod: V1Pod, status: V1PodStatus, results: ReadonlyMap<string, ContainerProbeResult>, now: Date): V1PodStatus {
  if (results.size === 0) return status;
  const sidecars = new Set((pod.spec?.initContainers ?? []).filter(isSidecar).map((c) => c.name));
  const specOf = (name: string): V1Container | undefined => [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === name);
  const containers = (status.containerStatuses ?? []).map((s) => withResult(s, results, specOf(s.name)));
  const init = (status.initContainerStatuses ?? []).map((s) => (sidecars.has(s.name) ? withResult(s, results, specOf(s.name)) : s));
  const changed = containers.some((s, i) => s !== status.containerStatuses?.[i]) || init.some((s, i) => s !== status.initContainerStatuses?.[i]);
  if (!changed) return status;
  const updated: V1PodStatus = {
    ...status,
    ...(status.containerStatuses === undefined ? {} : { containerStatuses: containers }),
    ...(status.initContainerStatuses === undefined ? {} : { initContainerStatuses: init }),
  };
  return recomputeReadiness(pod, updated, now);
}
