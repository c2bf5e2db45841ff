/**
 * What `/exec`, `/attach`, `/run` and `/portForward` act on, found as the kubelet v1.36 finds it
 * (`server.go` getExec…, `kubelet_pods.go` findContainer, GetAttach, GetPortForward):
 * - the pod must be one this node runs (desired-pod store): else 404 `pod does not exist`;
 * - the container must have a running instance in the runtime, looked up by the pod's UID (the
 *   path's `{uid}` when given, as the kubelet's `FindPod` prefers it): else 500 `container not
 *   found ("c")` (exec, run) or `container c not found in pod <name>_<namespace>` (attach), the
 *   kubelet's plain errors, which its streaming error writer answers with 500;
 * - attach takes `tty` from the container's spec, not from the query: a process's terminal cannot
 *   change once it runs;
 * - port-forward: a `{uid}` other than the pod's is 404 `pod not found`; the pod's newest ready
 *   sandbox is the target, else 500 `pod not found ("<name>_<namespace>")`.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Container, ContainerFilter, PodSandbox, PodSandboxFilter } from '../cri/types.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../reconcilers/model/runtime-labels.js';
import type { PodKey } from '../util/pod-key.js';

/** What the lookups ask of the runtime. */
export interface TargetRuntime {
  listContainers(filter?: ContainerFilter): Promise<Container[]>;
  listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]>;
}

/** A request the kubelet refuses at this step, with its status code and message. */
export class StreamTargetError extends Error {
  override readonly name = 'StreamTargetError';

  constructor(
    message: string,
    readonly status: 404 | 500,
  ) {
    super(message);
  }
}

export function isStreamTargetError(err: unknown): err is StreamTargetError {
  return err instanceof StreamTargetError;
}

/** The path's pod as nodelet's one pod key; `uid` is the optional `{uid}` segment ('' when absent). */
export type PodRef = PodKey;

/** `<name>_<namespace>`, the kubelet's pod full name in its messages. */
function fullName(ref: PodRef): string {
  return `${ref.name}_${ref.namespace}`;
}

/** The pod among this node's pods. @throws StreamTargetError 404 */
export function podByName(pods: readonly V1Pod[], ref: PodRef): V1Pod {
  const pod = pods.find((p) => p.metadata?.namespace === ref.namespace && p.metadata.name === ref.name);
  if (pod === undefined) throw new StreamTargetError('pod does not exist', 404);
  return pod;
}

async function runningContainerId(runtime: TargetRuntime, uid: string, container: string): Promise<string | undefined> {
  const running = await runtime.listContainers({ state: 'CONTAINER_RUNNING', labelSelector: { [LABEL_POD_UID]: uid, [LABEL_CONTAINER_NAME]: container } });
  // Two running instances of one container would be a bug elsewhere; the newest is the live one.
  return running.sort((a, b) => Number(b.createdAt - a.createdAt))[0]?.id;
}

/** The running container for exec and run. @throws StreamTargetError */
export async function execContainer(runtime: TargetRuntime, pod: V1Pod, ref: PodRef, container: string): Promise<string> {
  const id = await runningContainerId(runtime, ref.uid || (pod.metadata?.uid ?? ''), container);
  if (id === undefined) throw new StreamTargetError(`container not found ("${container}")`, 500);
  return id;
}

function specContainer(pod: V1Pod, name: string): V1Container | undefined {
  const spec = pod.spec;
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].find((c) => c.name === name);
}

/** The running container to attach to, and whether it has a terminal. @throws StreamTargetError */
export async function attachContainer(runtime: TargetRuntime, pod: V1Pod, ref: PodRef, container: string): Promise<{ containerId: string; tty: boolean }> {
  const missing = new StreamTargetError(`container ${container} not found in pod ${fullName(ref)}`, 500);
  const id = await runningContainerId(runtime, ref.uid || (pod.metadata?.uid ?? ''), container);
  if (id === undefined) throw missing;
  if (ref.uid !== '' && ref.uid !== pod.metadata?.uid) throw new StreamTargetError(`pod ${fullName(ref)} not found`, 500);
  const spec = specContainer(pod, container) ?? pod.spec?.ephemeralContainers?.find((c) => c.name === container);
  if (spec === undefined) throw missing;
  return { containerId: id, tty: spec.tty === true };
}

/** The sandbox to forward ports into. @throws StreamTargetError */
export async function forwardSandbox(runtime: TargetRuntime, pod: V1Pod, ref: PodRef): Promise<string> {
  const uid = pod.metadata?.uid ?? '';
  if (ref.uid !== '' && ref.uid !== uid) throw new StreamTargetError('pod not found', 404);
  const ready = await runtime.listPodSandbox({ state: 'SANDBOX_READY', labelSelector: { [LABEL_POD_UID]: uid } });
  const newest = ready.sort((a, b) => Number(b.createdAt - a.createdAt))[0];
  if (newest === undefined) throw new StreamTargetError(`pod not found ("${fullName(ref)}")`, 500);
  return newest.id;
}
