/**
 * A pod's `runtimeClassName` names a RuntimeClass object; what the runtime is given is that
 * object's `handler` (containerd's runtime name), never the class name itself. The kubelet
 * resolves it before every sandbox (runtimeclass.Manager.LookupRuntimeHandler): no class name
 * means the empty (default) handler; a class that does not exist fails the sandbox step.
 */

/** Reads RuntimeClass handlers from the API. Implemented in controllers/runtimeclass/. */
export interface RuntimeHandlerLookup {
  /**
   * The `handler` of the RuntimeClass named `runtimeClassName`.
   * @throws {RuntimeClassNotFoundError} when the cluster has no such RuntimeClass.
   */
  handlerOf(runtimeClassName: string, signal?: AbortSignal): Promise<string>;
}

/** The pod names a RuntimeClass the cluster does not have. */
export class RuntimeClassNotFoundError extends Error {
  constructor(readonly runtimeClassName: string) {
    // The kubelet's lister error, word for word: users see it in the FailedCreatePodSandBox event.
    super(`runtimeclass.node.k8s.io "${runtimeClassName}" not found`);
    this.name = 'RuntimeClassNotFoundError';
  }
}

export function isRuntimeClassNotFound(error: unknown): error is RuntimeClassNotFoundError {
  return error instanceof RuntimeClassNotFoundError;
}

/** The runtime handler a pod's sandbox runs with: '' (the runtime's default) without a class name. */
export async function runtimeHandlerFor(lookup: RuntimeHandlerLookup, runtimeClassName: string | undefined, signal?: AbortSignal): Promise<string> {
  if (runtimeClassName === undefined || runtimeClassName === '') return '';
  return lookup.handlerOf(runtimeClassName, signal);
}
