/**
 * Reads what the runtime has of one pod (sandboxes and containers labelled with its UID and this
 * node) into an `ObservedPod`. Objects that vanish between the list and the status call are
 * skipped: the next reconcile sees the runtime as it is then.
 */
import { isCriNotFound } from '../cri/errors.js';
import { nanosToDate, nanosToOptionalDate } from '../cri/time.js';
import type { CallOptions, Container, PodSandbox, RuntimeService } from '../cri/types.js';
import type { ObservedContainer, ObservedPod, ObservedSandbox } from './observed-pod.js';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_RESTART_COUNT,
  ANNOTATION_TERMINATION_MESSAGE_POLICY,
  LABEL_CONTAINER_NAME,
  intAnnotation,
  podSelector,
} from './runtime-labels.js';
import { ANNOTATION_TERMINATION_MESSAGE_HOST_PATH, readTerminationMessage } from './termination-message.js';

async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (isCriNotFound(error)) return undefined;
    throw error;
  }
}

async function observeSandbox(runtime: RuntimeService, sandbox: PodSandbox, options: CallOptions): Promise<ObservedSandbox | undefined> {
  const status = await ignoreNotFound(runtime.podSandboxStatus(sandbox.id, options));
  if (status === undefined) return undefined;
  return {
    id: sandbox.id,
    state: status.state,
    attempt: sandbox.metadata.attempt,
    createdAt: nanosToDate(sandbox.createdAt),
    ip: status.network?.ip ?? '',
    additionalIps: status.network?.additionalIps ?? [],
  };
}

async function observeContainer(runtime: RuntimeService, container: Container, options: CallOptions): Promise<ObservedContainer | undefined> {
  const status = await ignoreNotFound(runtime.containerStatus(container.id, options));
  if (status === undefined) return undefined;
  const startedAt = nanosToOptionalDate(status.startedAt);
  const finishedAt = nanosToOptionalDate(status.finishedAt);
  const message =
    status.state === 'CONTAINER_EXITED' && status.message === ''
      ? await readTerminationMessage({
          hostPath: status.annotations[ANNOTATION_TERMINATION_MESSAGE_HOST_PATH],
          policy: status.annotations[ANNOTATION_TERMINATION_MESSAGE_POLICY],
          exitCode: status.exitCode,
          logPath: status.logPath,
        })
      : status.message;
  return {
    id: container.id,
    name: container.labels[LABEL_CONTAINER_NAME] ?? container.metadata.name,
    sandboxId: container.podSandboxId,
    state: status.state,
    restartCount: intAnnotation(status.annotations, ANNOTATION_RESTART_COUNT, container.metadata.attempt),
    specHash: status.annotations[ANNOTATION_CONTAINER_HASH] ?? '',
    image: status.image.image,
    imageRef: status.imageRef,
    createdAt: nanosToDate(status.createdAt),
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    exitCode: status.exitCode,
    reason: status.reason,
    message,
    annotations: status.annotations,
    ...(status.resources === undefined ? {} : { applied: status.resources }),
  };
}

/** Newest first; equal creation times (coarse clocks) fall back to the higher attempt or restart count. */
function newestFirst<T extends { createdAt: Date }>(items: (T | undefined)[], generation: (item: T) => number): T[] {
  return items
    .filter((i): i is T => i !== undefined)
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || generation(b) - generation(a));
}

/** Observes every sandbox and container of pod `uid` that this node created; `options.signal` cancels every call. */
export async function observePod(runtime: RuntimeService, uid: string, nodeName: string, options: CallOptions = {}): Promise<ObservedPod> {
  const labelSelector = podSelector(uid, nodeName);
  const [sandboxes, containers] = await Promise.all([runtime.listPodSandbox({ labelSelector }, options), runtime.listContainers({ labelSelector }, options)]);
  const [observedSandboxes, observedContainers] = await Promise.all([
    Promise.all(sandboxes.map((s) => observeSandbox(runtime, s, options))),
    Promise.all(containers.map((c) => observeContainer(runtime, c, options))),
  ]);
  return {
    uid,
    sandboxes: newestFirst(observedSandboxes, (s) => s.attempt),
    containers: newestFirst(observedContainers, (c) => c.restartCount),
  };
}
