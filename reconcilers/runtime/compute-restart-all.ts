/**
 * The plan of an in-place restart of the whole pod (`RestartAllContainers`, `model/restart-all.ts`),
 * as the kubelet's computePodActions makes it when its status says AllContainersRestarting:
 *
 * - every instance of every init and regular container the runtime has is removed, a running (or
 *   created, or unknown) one stopped first with no grace period; ephemeral containers are left;
 * - in reverse order of how the pod starts: the regular containers, then the init containers, and
 *   last the containers whose exit started it (regular, then init), as the kubelet's
 *   `getContainersToReset`, so the exits that explain the restart stay visible longest;
 * - the sandbox stays, and nothing starts: the next run starts the pod from its first init
 *   container, in the same sandbox, with the same volumes;
 * - when the sandbox itself must be replaced, that comes first, as the kubelet's SyncPod kills the
 *   pod and creates a new sandbox instead of removing anything; the containers go in the next run.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ObservedPod } from '../model/observed-pod.js';
import { hasRuntimeObjects } from '../model/observed-pod.js';
import { exitRestartsAll } from '../model/restart-all.js';
import type { ContainerToReset, PodActions } from './pod-actions.js';

/** Why a container that exited with a rule's code goes, and why every other one does. */
const SOURCE_REASON = 'exited with a code whose rule restarts all containers';
const TARGET_REASON = 'all containers restart';

/** The instances of `containers` in the runtime, split into those whose exit started the restart and the others. */
function resetsOf(containers: readonly V1Container[], observed: ObservedPod): { sources: ContainerToReset[]; targets: ContainerToReset[] } {
  const sources: ContainerToReset[] = [];
  const targets: ContainerToReset[] = [];
  for (const spec of containers) {
    // Every instance, not only the newest: nothing of the container may be left.
    for (const instance of observed.containers.filter((c) => c.name === spec.name)) {
      const exited = instance.state === 'CONTAINER_EXITED';
      if (exited && exitRestartsAll(spec, instance.exitCode)) sources.push({ id: instance.id, name: instance.name, kill: false, reason: SOURCE_REASON });
      else targets.push({ id: instance.id, name: instance.name, kill: !exited, reason: TARGET_REASON });
    }
  }
  return { sources, targets };
}

/** The container instances an in-place restart removes, in the order it removes them. */
export function containersToReset(pod: V1Pod, observed: ObservedPod): ContainerToReset[] {
  const init = resetsOf(pod.spec?.initContainers ?? [], observed);
  const regular = resetsOf(pod.spec?.containers ?? [], observed);
  return [...regular.targets, ...init.targets, ...regular.sources, ...init.sources];
}

/**
 * The plan of a pod restarting all its containers: the removals, in the sandbox that stays; or,
 * when the sandbox must change (`sandboxChange`, its reason), the kill of the pod and a new
 * sandbox with nothing started in it.
 */
export function planRestartAll(pod: V1Pod, observed: ObservedPod, sandboxChange: string | undefined): PodActions {
  const none = { containersToKill: [], containersToStart: [], initialized: false } as const;
  if (sandboxChange !== undefined) {
    const attempt = observed.sandboxes[0] === undefined ? 0 : observed.sandboxes[0].attempt + 1;
    return { ...none, killPod: hasRuntimeObjects(observed), killPodReason: `sandbox changed: ${sandboxChange}`, createSandbox: true, sandboxId: undefined, sandboxAttempt: attempt, containersToReset: [] };
  }
  return { ...none, killPod: false, killPodReason: '', createSandbox: false, sandboxId: observed.sandboxes[0]?.id, sandboxAttempt: 0, containersToReset: containersToReset(pod, observed) };
}
