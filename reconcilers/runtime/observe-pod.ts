/**
 * Reads what the runtime has of one pod (sandboxes and containers labelled with its UID and this
 * node) into an `ObservedPod`: by listing them (`observePod`), or, when the caller knows every
 * sandbox and container the pod has, by their IDs alone (`observeKnownPod`, no list). Objects that
 * vanish between the list and the status call are skipped: the next reconcile sees the runtime as
 * it is then.
 */
import { isCriNotFound } from '../../cri/errors.js';
import { nanosToDate, nanosToOptionalDate } from '../../cri/time.js';
import type { CallOptions, RuntimeService } from '../../cri/types.js';
import type { ObservedContainer, ObservedPod, ObservedSandbox } from '../model/observed-pod.js';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_RESTART_COUNT,
  ANNOTATION_TERMINATION_MESSAGE_POLICY,
  LABEL_CONTAINER_NAME,
  intAnnotation,
  podSelector,
} from '../model/runtime-labels.js';
import { ANNOTATION_TERMINATION_MESSAGE_HOST_PATH, readTerminationMessage } from './termination-message.js';

async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (isCriNotFound(error)) return undefined;
    throw error;
  }
}

/** Every sandbox and container a pod has, by ID: what a run that knows them observes without listing. */
export interface KnownRuntimeObjects {
  readonly sandboxIds: readonly string[];
  /** Each container's ID with its sandbox's (a container's status does not name its sandbox). */
  readonly containers: readonly { readonly id: string; readonly podSandboxId: string }[];
}

async function observeSandbox(runtime: RuntimeService, id: string, options: CallOptions): Promise<ObservedSandbox | undefined> {
  const status = await ignoreNotFound(runtime.podSandboxStatus(id, options));
  if (status === undefined) return undefined;
  return {
    id,
    state: status.state,
    attempt: status.metadata.attempt,
    createdAt: nanosToDate(status.createdAt),
    ip: status.network?.ip ?? '',
    additionalIps: status.network?.additionalIps ?? [],
    runtimeHandler: status.runtimeHandler,
  };
}

async function observeContainer(runtime: RuntimeService, container: KnownRuntimeObjects['containers'][number], options: CallOptions): Promise<ObservedContainer | undefined> {
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
    name: status.labels[LABEL_CONTAINER_NAME] ?? status.metadata.name,
    sandboxId: container.podSandboxId,
    state: status.state,
    restartCount: intAnnotation(status.annotations, ANNOTATION_RESTART_COUNT, status.metadata.attempt),
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
    ...(status.logPath === '' ? {} : { logPath: status.logPath }),
    ...(status.user === undefined ? {} : { user: status.user }),
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
  return observeKnownPod(runtime, uid, { sandboxIds: sandboxes.map((s) => s.id), containers }, options);
}

/**
 * Observes the sandboxes and containers of pod `uid` named in `known`, without listing: only for a
 * caller that knows every one the pod has (nothing else creates them). Those that are gone are skipped.
 */
export async function observeKnownPod(runtime: RuntimeService, uid: string, known: KnownRuntimeObjects, options: CallOptions = {}): Promise<ObservedPod> {
  const [observedSandboxes, observedContainers] = await Promise.all([
    Promise.all(known.sandboxIds.map((id) => observeSandbox(runtime, id, options))),
    Promise.all(known.containers.map((c) => observeContainer(runtime, c, options))),
  ]);
  return {
    uid,
    sandboxes: newestFirst(observedSandboxes, (s) => s.attempt),
    containers: newestFirst(observedContainers, (c) => c.restartCount),
  };
}
