/**
 * The pod a gone UID's containers describe, as the kubelet's `restoreSpecsFromContainerLabels`:
 * when the API no longer has a pod (force-deleted with `--grace-period=0 --force`, or deleted while
 * the agent was down) its containers are still stopped through the one kill path, with their
 * preStop hooks (kept as an annotation since their creation) and `Killing` events. Only what
 * stopping needs is restored: identity, each container's name, preStop handler and ports, and the
 * grace period recorded on it. Containers created before these annotations existed restore
 * without a hook. Pure.
 */
import type { V1Container, V1ContainerPort, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { PodKey } from '../../util/pod-key.js';
import type { ObservedContainer } from '../model/observed-pod.js';
import { ANNOTATION_CONTAINER_PORTS, ANNOTATION_PRE_STOP_HANDLER } from '../model/runtime-labels.js';

/** The annotation's JSON when it is an object (or, for `array`, an array); undefined otherwise. */
function parsed(text: string | undefined, shape: 'object' | 'array'): unknown {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    const isArray = Array.isArray(value);
    return typeof value === 'object' && value !== null && isArray === (shape === 'array') ? value : undefined;
  } catch {
    // Not written by nodelet (or damaged): the container restores without it.
    return undefined;
  }
}

function restoredContainer(observed: ObservedContainer): V1Container {
  const preStop = parsed(observed.annotations[ANNOTATION_PRE_STOP_HANDLER], 'object') as V1LifecycleHandler | undefined;
  const ports = parsed(observed.annotations[ANNOTATION_CONTAINER_PORTS], 'array') as V1ContainerPort[] | undefined;
  return { name: observed.name, ...(preStop === undefined ? {} : { lifecycle: { preStop } }), ...(ports === undefined ? {} : { ports }) };
}

/** A pod with `key`'s identity and one container per container name the runtime has (newest instance first). */
export function restorePod(key: PodKey, containers: readonly ObservedContainer[], gracePeriodSeconds: number): V1Pod {
  const seen = new Set<string>();
  const restored: V1Container[] = [];
  for (const c of containers) {
    if (seen.has(c.name)) continue;
    seen.add(c.name);
    restored.push(restoredContainer(c));
  }
  return { metadata: { name: key.name, namespace: key.namespace, uid: key.uid }, spec: { containers: restored, terminationGracePeriodSeconds: gracePeriodSeconds } };
}
