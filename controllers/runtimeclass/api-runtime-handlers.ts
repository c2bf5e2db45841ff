/**
 * RuntimeClass handlers read from the API server by name, at each sandbox creation. The kubelet
 * keeps an informer for this; a read by name gives the same answer without a watch per node for a
 * field most pods never set, and is never stale when a class is created just before its pod.
 * The node identity may read RuntimeClasses (the Node authorizer's node rules; the chart's role).
 */
import type { KubeClient } from '../../kube/client.js';
import { NodeV1Client } from '../../kube/groups.js';
import { isNotFound } from '../../util/api-errors.js';
import { RuntimeClassNotFoundError, type RuntimeHandlerLookup } from '../../reconcilers/container/runtime-handlers.js';

/** Creates the lookup over the API of `kube`. */
export function createApiRuntimeHandlers(kube: KubeClient): RuntimeHandlerLookup {
  const api = new NodeV1Client(kube);
  return {
    async handlerOf(runtimeClassName: string, signal?: AbortSignal): Promise<string> {
      signal?.throwIfAborted();
      try {
        const runtimeClass = await api.readRuntimeClass({ name: runtimeClassName });
        return runtimeClass.handler;
      } catch (error) {
        if (isNotFound(error)) throw new RuntimeClassNotFoundError(runtimeClassName);
        throw error;
      }
    },
  };
}
