/** Which role a container of the pod spec has. */
import type { V1Container } from '@kubernetes/client-node';

/** A sidecar: an init container with `restartPolicy: Always`, which keeps running beside the app containers. */
export function isSidecar(container: V1Container): boolean {
  return container.restartPolicy === 'Always';
}
