/**
 * The kubelet's words about lifecycle hooks, so `kubectl describe pod` reads the same on a nodelet
 * node. Pure.
 *
 * Since Kubernetes 1.26 the kubelet's events say only `PostStartHook failed` / `PreStopHook failed`
 * (the handler's output can hold secrets, and events are widely readable); the full message of a
 * failed postStart becomes the container's `waiting.message` next to the reason
 * `PostStartHookError`, and both are logged.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { truncateOutput } from '../probes/run-probe.js';

/** Event reasons and messages, as the kubelet's `events` package names them. */
export const FAILED_POST_START_HOOK = 'FailedPostStartHook';
export const FAILED_PRE_STOP_HOOK = 'FailedPreStopHook';
export const POST_START_EVENT_MESSAGE = 'PostStartHook failed';
export const PRE_STOP_EVENT_MESSAGE = 'PreStopHook failed';
/** The `Killing` event's message when a failed postStart hook kills the container. */
export const POST_START_KILL_MESSAGE = 'FailedPostStartHook';

/** `name_namespace(uid)`, the kubelet's `format.Pod`. */
export function formatPod(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

/** Go's `%q` for the strings hooks print (JSON escaping is the same for everything printable). */
function quote(text: string): string {
  return JSON.stringify(text);
}

/** The error of an exec that exited non-zero, as the kubelet's CRI client words it. */
export function execExitError(command: readonly string[], exitCode: number, stderr: string): string {
  return `command '${command.join(' ')}' exited with ${exitCode}: ${stderr}`;
}

/** A failed exec hook: `error` is the runtime's error or {@link execExitError}; `output` is stdout then stderr. */
export function execHookFailure(f: { pod: V1Pod; containerName: string; command: readonly string[]; error: string; output: string }): string {
  return truncateOutput(`Exec lifecycle hook ([${f.command.join(' ')}]) for Container ${quote(f.containerName)} in Pod ${quote(formatPod(f.pod))} failed - error: ${f.error}, message: ${quote(f.output)}`);
}

/** A failed httpGet hook. */
export function httpHookFailure(f: { pod: V1Pod; containerName: string; path: string; error: string }): string {
  return truncateOutput(`HTTP lifecycle hook (${f.path}) for Container ${quote(f.containerName)} in Pod ${quote(formatPod(f.pod))} failed - error: ${f.error}`);
}

/** A handler nodelet cannot run (no action, two actions, tcpSocket). */
export function invalidHandlerFailure(reason: string): string {
  return `Cannot run handler: invalid handler: ${reason}`;
}
