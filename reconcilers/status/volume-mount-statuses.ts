/**
 * `containerStatuses[].volumeMounts` as the kubelet writes them (RecursiveReadOnlyMounts, GA since
 * 1.33; `convertToAPIContainerStatuses`): every mount of the container's spec with its name and
 * path, and for a read-only one `readOnly` and the recursive read-only mode it got (`Enabled` or
 * `Disabled`). Once the API shows a container's mounts they are kept (the kubelet: immutable).
 */
import type { V1Container, V1ContainerStatus, V1VolumeMount, V1VolumeMountStatus } from '@kubernetes/client-node';
import { mountAsksRecursiveReadOnly, resolveRecursiveReadOnly } from '../volumes/mounts.js';

/** The recursive read-only mode a read-only mount got; one that could not be had is `Disabled` (the kubelet logs it). */
function recursiveReadOnlyMode(mount: V1VolumeMount, supported: boolean): 'Enabled' | 'Disabled' {
  try {
    return resolveRecursiveReadOnly(mount, supported) ? 'Enabled' : 'Disabled';
  } catch {
    return 'Disabled';
  }
}

/**
 * The container's mount statuses. `supported`: whether the pod's runtime handler makes read-only
 * mounts recursive; undefined when the handler is not known yet (a RuntimeClass pod before its
 * sandbox), and then a container that asks for a recursive mode gets none yet rather than a guess.
 * `previous`: the container's status as the API holds it.
 */
export function volumeMountStatuses(spec: V1Container, supported: boolean | undefined, previous: V1ContainerStatus | undefined): Pick<V1ContainerStatus, 'volumeMounts'> {
  if (previous?.volumeMounts !== undefined) return { volumeMounts: previous.volumeMounts };
  const mounts = spec.volumeMounts ?? [];
  if (mounts.length === 0) return {};
  if (supported === undefined && mounts.some(mountAsksRecursiveReadOnly)) return {};
  const statuses = mounts.map((m): V1VolumeMountStatus => ({
    name: m.name,
    mountPath: m.mountPath,
    ...(m.readOnly === true ? { readOnly: true, recursiveReadOnly: recursiveReadOnlyMode(m, supported ?? false) } : {}),
  }));
  return { volumeMounts: statuses };
}
