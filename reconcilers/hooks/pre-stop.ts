/**
 * The preStop hook of a container being stopped, as the kubelet's `killContainer` runs it
 * (`executePreStopHook`):
 *
 * - it runs only for a running container whose spec has one, and only with a grace period left;
 * - it is bounded by the grace period: a hook still running when the grace period ends — or when
 *   a shorter one arrives meanwhile (`currentGraceSeconds`, re-read every half second) — is
 *   abandoned and the stop goes on; an httpGet is cancelled then, while an exec, run with no
 *   ExecSync timeout as the kubelet runs it, is left to end with its container (its SIGKILL comes
 *   at the end of StopContainer's window);
 * - the whole seconds it took are subtracted from the grace period StopContainer gets, which never
 *   drops below 2 s (the kubelet's minimum shutdown window, so SIGTERM always gets a moment);
 * - a failure is a Warning event `FailedPreStopHook` (its message logged, not put in the event, as
 *   the kubelet does since 1.26) and never stops the stop.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { TimerHandle } from '../../util/clock.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import { FAILED_PRE_STOP_HOOK, PRE_STOP_EVENT_MESSAGE } from './hook-messages.js';
import { hookOf } from './hook-spec.js';
import { runHook, type HookRunnerDeps } from './run-hook.js';

const GRACE_POLL_MS = 500;

export interface PreStopDeps extends HookRunnerDeps {
  readonly events: EventRecorder;
  readonly logger: Logger;
}

export interface PreStopRequest {
  readonly pod: V1Pod;
  readonly containerName: string;
  readonly containerId: string;
  /** The pod's primary IP, the default host of an httpGet hook. */
  readonly podIp: string;
  readonly graceSeconds: number;
  /** Re-read while the hook runs: a shorter grace period abandons it sooner. */
  readonly currentGraceSeconds?: (() => number) | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** A preStop run abandoned because the grace period ran out (the abort reason of its signal). */
export class PreStopGraceExpiredError extends Error {
  override readonly name = 'PreStopGraceExpiredError';
}

/** The spec of a container of the pod by name: app, init (sidecars) or ephemeral. */
export function containerSpecOf(pod: V1Pod, name: string): V1Container | undefined {
  const spec = pod.spec;
  return spec?.containers.find((c) => c.name === name) ?? spec?.initContainers?.find((c) => c.name === name) ?? spec?.ephemeralContainers?.find((c) => c.name === name);
}

/**
 * Runs the container's preStop hook, if any, and returns the grace period (seconds) to hand to
 * StopContainer: `graceSeconds` when there is no hook, else what is left of it after the hook (the
 * killer gives StopContainer its minimal window on top). Rejects only when `signal` aborts.
 */
export async function runPreStopHook(deps: PreStopDeps, request: PreStopRequest): Promise<number> {
  const container = containerSpecOf(request.pod, request.containerName);
  const action = container === undefined ? undefined : hookOf(container, 'preStop');
  if (container === undefined || action === undefined || request.graceSeconds <= 0) return request.graceSeconds;
  const log = deps.logger.child({ containerId: request.containerId, container: request.containerName });
  const startedMs = deps.clock.now();
  const deadline = new AbortController();
  const cancelDeadline = armDeadline(deps, { startedMs, graceSeconds: request.graceSeconds, current: request.currentGraceSeconds, controller: deadline });
  log.info({ gracePeriodSeconds: request.graceSeconds, action: action.kind }, 'running preStop hook');
  try {
    const target = { pod: request.pod, container, containerId: request.containerId, podIp: request.podIp };
    const outcome = await (action.kind === 'exec' ? outlivedExec(deps, { run: { action, target }, signal: request.signal, deadline: deadline.signal }, log) : runHook(deps, { action, target, signal: withDeadline(request.signal, deadline.signal), timeoutSeconds: request.graceSeconds }));
    if (!outcome.ok) {
      log.warn({ message: outcome.message }, 'preStop hook failed');
      deps.events.record(request.pod, { type: 'Warning', reason: FAILED_PRE_STOP_HOOK, message: PRE_STOP_EVENT_MESSAGE, fieldPath: containerFieldPath(request.pod, container.name) });
    }
  } catch (error) {
    if (request.signal?.aborted === true || !deadline.signal.aborted) throw error;
    log.info({ gracePeriodSeconds: effectiveGrace(request) }, 'preStop hook not completed in the grace period: abandoned');
  } finally {
    cancelDeadline();
  }
  const elapsedSeconds = Math.floor((deps.clock.now() - startedMs) / 1000);
  return effectiveGrace(request) - elapsedSeconds;
}

function withDeadline(signal: AbortSignal | undefined, deadline: AbortSignal): AbortSignal {
  return signal === undefined ? deadline : AbortSignal.any([signal, deadline]);
}

/**
 * An exec hook as the kubelet runs it (RunInContainer with no timeout): the agent stops waiting at
 * the deadline, but the command is neither timed out nor cancelled, so it runs on in the container
 * until the container itself stops (the SIGKILL after StopContainer's window), as a hook that
 * never exits does under the kubelet. Only the run's own `signal` (the agent stopping) cancels it.
 */
async function outlivedExec(deps: PreStopDeps, e: { run: Omit<Parameters<typeof runHook>[1], 'signal' | 'timeoutSeconds'>; signal: AbortSignal | undefined; deadline: AbortSignal }, log: Logger): ReturnType<typeof runHook> {
  const hook = runHook(deps, { ...e.run, ...(e.signal === undefined ? {} : { signal: e.signal }) });
  const expired = new Promise<never>((_resolve, reject) => {
    const fire = (): void => { reject(e.deadline.reason instanceof Error ? e.deadline.reason : new PreStopGraceExpiredError('the grace period ran out')); };
    if (e.deadline.aborted) fire();
    else e.deadline.addEventListener('abort', fire, { once: true });
  });
  try {
    return await Promise.race([hook, expired]);
  } catch (error) {
    // Abandoned at the deadline: the call still settles later (when the container dies); said once, quietly.
    hook.catch((late: unknown) => { log.debug({ err: late }, 'abandoned preStop hook ended'); });
    throw error;
  }
}

function effectiveGrace(request: PreStopRequest): number {
  return Math.min(request.graceSeconds, request.currentGraceSeconds?.() ?? request.graceSeconds);
}

/**
 * Aborts `controller` once the grace period has passed since `startedMs`; with `current`, checks
 * every half second whether a shorter grace period has already passed. Returns the cancel.
 */
function armDeadline(deps: HookRunnerDeps, d: { startedMs: number; graceSeconds: number; current: (() => number) | undefined; controller: AbortController }): () => void {
  const { clock } = deps;
  let timer: TimerHandle | undefined;
  const check = (): void => {
    const grace = Math.min(d.graceSeconds, d.current?.() ?? d.graceSeconds);
    const remainingMs = d.startedMs + grace * 1000 - clock.now();
    if (remainingMs <= 0) {
      d.controller.abort(new PreStopGraceExpiredError(`the grace period of ${grace} s ran out`));
      return;
    }
    timer = clock.setTimeout(check, d.current === undefined ? remainingMs : Math.min(remainingMs, GRACE_POLL_MS));
  };
  check();
  return () => {
    if (timer !== undefined) clock.clearTimeout(timer);
  };
}
