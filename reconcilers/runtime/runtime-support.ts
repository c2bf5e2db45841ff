/**
 * What a pod can ask for that this node cannot give, checked where the kubelet's own check fails
 * — in the sandbox step, so the pod stays Pending (containers `ContainerCreating`) with a Warning
 * event on every attempt, and no sandbox is ever created:
 *
 *   - `resourceClaims` (dynamic resource allocation): nodelet has no DRA manager and no driver
 *     plugins, so preparing the claims fails (kubelet: `FailedPrepareDynamicResources`, before the
 *     sandbox).
 *
 * (`hostUsers: false` on a handler without user namespaces is refused by `userns/`.)
 *
 * Pure: the pod in, the refusal (or nothing) out.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** Why the pod's resource claims cannot be prepared on this node, if it has any. */
export function dynamicResourcesRefusal(pod: V1Pod): string | undefined {
  const claims = (pod.spec?.resourceClaims ?? []).map((c) => c.name);
  if (claims.length === 0) return undefined;
  return `nodelet has no dynamic resource allocation (no DRA driver is registered on this node): cannot prepare resource claims ${claims.map((c) => `"${c}"`).join(', ')}`;
}
