/**
 * The postStart hook of a container that just started, as the kubelet's `startContainer` runs it
 * (its step 4): the start waits for the hook. When it fails, the kubelet
 *
 * 1. records a Warning event `FailedPostStartHook` ("PostStartHook failed"; the handler's message
 *    is logged and becomes the waiting message, not the event's, since 1.26);
 * 2. kills the container (a `Killing` event "FailedPostStartHook"; the preStop hook runs as for
 *    any kill, with the pod's grace period);
 * 3. counts the start as failed with the reason `PostStartHookError`, so the container shows
 *    waiting with that reason and the next sync restarts it per restart policy, under the restart
 *    backoff (CrashLoopBackOff when it keeps failing).
 *
 * A cancelled run (the signal) kills nothing and records nothing: the next owner of the pod looks
 * at the runtime again.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import { ContainerStartError, isCancellation } from '../model/sync-errors.js';
import { FAILED_POST_START_HOOK, POST_START_EVENT_MESSAGE } from './hook-messages.js';
import { hookOf } from './hook-spec.js';
import { runHook, type HookRunnerDeps } from './run-hook.js';

export interface PostStartDeps extends HookRunnerDeps {
  readonly events: EventRecorder;
  readonly logger: Logger;
  /** Kills the container whose hook failed (the executor's container stop, preStop included). */
  readonly kill: (pod: V1Pod, containerId: string, signal: AbortSignal | undefined) => Promise<void>;
}

export interface PostStartRequest {
  readonly pod: V1Pod;
  readonly container: V1Container;
  readonly containerId: string;
  /** The pod's primary IP, the default host of an httpGet hook. */
  readonly podIp: string;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Runs the container's postStart hook, if any. Resolves when there is none or it succeeded; when
 * it failed, kills the container and throws a `ContainerStartError` (`PostStartHookError`, the
 * handler's message). Rejects with the cancellation when `signal` aborts.
 */
export async function runPostStartHook(deps: PostStartDeps, request: PostStartRequest): Promise<void> {
  const { pod, container, containerId, signal } = request;
  const action = hookOf(container, 'postStart');
  if (action === undefined) return;
  const log = deps.logger.child({ podUID: pod.metadata?.uid, containerId, container: container.name });
  const startedMs = deps.clock.now();
  const outcome = await runHook(deps, { action, target: { pod, container, containerId, podIp: request.podIp }, signal });
  log.info({ action: action.kind, ok: outcome.ok, tookMs: deps.clock.now() - startedMs }, 'ran postStart hook');
  if (outcome.ok) return;
  log.warn({ message: outcome.message }, 'postStart hook failed: killing the container');
  deps.events.record(pod, { type: 'Warning', reason: FAILED_POST_START_HOOK, message: POST_START_EVENT_MESSAGE, fieldPath: containerFieldPath(pod, container.name) });
  try {
    await deps.kill(pod, containerId, signal);
  } catch (error) {
    if (isCancellation(error, signal)) throw error;
    // The start still failed; the next sync sees the container and stops or restarts it.
    log.warn({ err: error }, 'killing the container after its postStart hook failed did not succeed');
  }
  throw new ContainerStartError(container.name, 'PostStartHookError', outcome.message);
}
