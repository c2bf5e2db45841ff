/**
 * Which log file `/containerLogs/{namespace}/{pod}/{container}` reads, and the kubelet's answers
 * when there is none: the pod must be one this node runs (404 `pod "p" does not exist`), the
 * container one of its spec (404 `container "c" not found in pod "p"`). The instance is found in
 * the runtime (every instance of the container, newest first by restart count): the newest one
 * that has started, or with `previous` the one before it (400 `previous terminated container "c"
 * in pod "p" not found` when there is none); a container that never started yet is 400 `container
 * "c" in pod "p" is waiting to start: <reason>`, with the kubelet's words for image pull failures.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Container, ContainerStatus, ContainerFilter } from '../cri/types.js';
import { ANNOTATION_RESTART_COUNT, LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../reconcilers/model/runtime-labels.js';

/** What the container logs route asks of the runtime. */
export interface LogRuntime {
  listContainers(filter?: ContainerFilter): Promise<Container[]>;
  containerStatus(containerId: string): Promise<ContainerStatus>;
}

/** A request the kubelet refuses, with its status code and message. */
export class ContainerLogsError extends Error {
  override readonly name = 'ContainerLogsError';

  constructor(
    message: string,
    readonly status: 400 | 404,
  ) {
    super(message);
  }
}

export function isContainerLogsError(err: unknown): err is ContainerLogsError {
  return err instanceof ContainerLogsError;
}

/** The log file to read and the container instance that writes it. */
export interface LogTarget {
  readonly containerId: string;
  readonly logPath: string;
}

/** The pod named `namespace/name` among this node's pods. @throws ContainerLogsError 404 */
export function findPod(pods: readonly V1Pod[], namespace: string, name: string): V1Pod {
  const pod = pods.find((p) => p.metadata?.namespace === namespace && p.metadata.name === name);
  if (pod === undefined) throw new ContainerLogsError(`pod "${name}" does not exist`, 404);
  return pod;
}

/** Whether `container` is one of the pod's containers (regular, init or ephemeral), as the kubelet's node server looks it up. */
export function inSpec(pod: V1Pod, container: string): boolean {
  const spec = pod.spec;
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? []), ...(spec?.ephemeralContainers ?? [])].some((c) => c.name === container);
}

function restartCount(c: Container): number {
  return Number(c.annotations[ANNOTATION_RESTART_COUNT] ?? c.metadata.attempt);
}

/** Newest first: by restart count, then by creation time. */
function newestFirst(a: Container, b: Container): number {
  return restartCount(b) - restartCount(a) || Number(b.createdAt - a.createdAt);
}

const PULL_WORDS: Readonly<Record<string, string>> = { ErrImagePull: "image can't be pulled", ImagePullBackOff: 'trying and failing to pull image' };

function waitingError(pod: V1Pod, container: string, podName: string): ContainerLogsError {
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.ephemeralContainerStatuses ?? [])];
  const reason = statuses.find((s) => s.name === container)?.state?.waiting?.reason ?? 'ContainerCreating';
  return new ContainerLogsError(`container "${container}" in pod "${podName}" is waiting to start: ${PULL_WORDS[reason] ?? reason}`, 400);
}

/** The instances of `container` that have started, newest first. */
async function startedInstances(runtime: LogRuntime, uid: string, container: string): Promise<{ all: Container[]; started: Container[] }> {
  const all = (await runtime.listContainers({ labelSelector: { [LABEL_POD_UID]: uid, [LABEL_CONTAINER_NAME]: container } })).sort(newestFirst);
  return { all, started: all.filter((c) => c.state !== 'CONTAINER_CREATED') };
}

/** The log file for `container` of `pod`; see this file's header. @throws ContainerLogsError */
export async function locateLog(runtime: LogRuntime, pod: V1Pod, request: { container: string; previous: boolean }): Promise<LogTarget> {
  const podName = pod.metadata?.name ?? '';
  const { container, previous } = request;
  if (!inSpec(pod, container)) throw new ContainerLogsError(`container "${container}" not found in pod "${podName}"`, 404);
  const { all, started } = await startedInstances(runtime, pod.metadata?.uid ?? '', container);
  // The previous instance is the one before the newest; the newest may not have started yet.
  const newestStarted = all[0] !== undefined && all[0].state !== 'CONTAINER_CREATED';
  const chosen = previous ? started[newestStarted ? 1 : 0] : started[0];
  if (chosen === undefined) {
    if (previous) throw new ContainerLogsError(`previous terminated container "${container}" in pod "${podName}" not found`, 400);
    throw waitingError(pod, container, podName);
  }
  const status = await runtime.containerStatus(chosen.id);
  return { containerId: chosen.id, logPath: status.logPath };
}

/** Whether the container instance still runs (for `follow`); a vanished one does not. */
export async function isRunning(runtime: LogRuntime, containerId: string): Promise<boolean> {
  try {
    return (await runtime.containerStatus(containerId)).state === 'CONTAINER_RUNNING';
  } catch {
    return false;
  }
}
