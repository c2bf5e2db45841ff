/**
 * Ephemeral containers (`kubectl debug`), as the kubelet v1.36 runs them (kuberuntime_manager.go
 * computePodActions, kuberuntime_container.go startContainer):
 *
 * - one is started when the pod's sandbox is ready and the runtime has no instance of it yet, even
 *   before the init containers have finished (so a pod stuck initializing can be debugged);
 * - it is never restarted: once any instance exists, whatever its state, it is left alone, and its
 *   exit does not stop the pod;
 * - it is never killed because the spec changed (its spec cannot change: the API server only ever
 *   adds ephemeral containers) and it does not keep a pod alive, but it is killed with the pod;
 * - with `targetContainerName` it joins the process namespace of that container's newest instance
 *   (CRI `NamespaceMode TARGET` with `target_id`) when the pod's containers have their own process
 *   namespaces; a target the runtime does not have is a `CreateContainerConfigError`.
 *
 * The API server forbids probes, lifecycle hooks, ports and resources on them, so nothing here
 * looks for any.
 */
import type { V1Container, V1EphemeralContainer, V1Pod } from '@kubernetes/client-node';
import type { NamespaceOptions } from '../../cri/types.js';
import type { ContainerToStart } from './pod-actions.js';
import { latestContainer, type ObservedPod } from '../model/observed-pod.js';
import { ContainerStartError } from '../model/sync-errors.js';

/** The pod's ephemeral containers, in spec order. */
export function ephemeralContainersOf(pod: V1Pod): readonly V1EphemeralContainer[] {
  return pod.spec?.ephemeralContainers ?? [];
}

/** An ephemeral container's spec as a container spec: the same fields, plus `targetContainerName`. */
export function ephemeralAsContainer(container: V1EphemeralContainer): V1Container {
  return container;
}

/** The ephemeral containers that have never been started in the runtime: each is started once. */
export function ephemeralContainersToStart(pod: V1Pod, observed: ObservedPod): ContainerToStart[] {
  return ephemeralContainersOf(pod).flatMap((c, index): ContainerToStart[] =>
    latestContainer(observed, c.name) === undefined ? [{ kind: 'ephemeral', index, name: c.name, reason: 'ephemeral container never started', restartCount: 0 }] : [],
  );
}

/**
 * The process namespace of an ephemeral container: its target's (TARGET with the target's newest
 * runtime container) when it names one and the pod's containers have their own process namespaces
 * (with `shareProcessNamespace` or `hostPID` every container already sees the same processes).
 * @throws ContainerStartError `CreateContainerConfigError` when the runtime has no instance of the target
 */
export function ephemeralNamespaces(container: V1Container & { targetContainerName?: string }, podNamespaces: NamespaceOptions, observed: ObservedPod): NamespaceOptions {
  const target = container.targetContainerName;
  if (target === undefined || target === '' || podNamespaces.pid !== 'CONTAINER') return podNamespaces;
  const instance = latestContainer(observed, target);
  if (instance === undefined) throw new ContainerStartError(container.name, 'CreateContainerConfigError', `unable to find target container ${target}`);
  return { ...podNamespaces, pid: 'TARGET', targetId: instance.id };
}
