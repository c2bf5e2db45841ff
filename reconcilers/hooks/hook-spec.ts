/**
 * A container's lifecycle handler (`lifecycle.postStart` / `lifecycle.preStop`) as one plain
 * action, the kubelet's `handlerRunner.Run` switch in data: `exec`, `httpGet` or `sleep`. A handler
 * that names no action, more than one, or `tcpSocket` (kept in the API for compatibility only: the
 * kubelet refuses it at run time) is `invalid`: running it fails with the kubelet's "Cannot run
 * handler" message, so the hook is never silently skipped. Pure.
 */
import type { V1Container, V1LifecycleHandler } from '@kubernetes/client-node';
import { httpGetActionOf, type HttpGetAction } from '../probes/probe-spec.js';

/** Which hook of the container. */
export type HookKind = 'postStart' | 'preStop';

export type HookAction =
  | { readonly kind: 'exec'; readonly command: readonly string[] }
  | HttpGetAction
  | { readonly kind: 'sleep'; readonly seconds: number }
  /** Not runnable; `reason` says why (for the failure message). */
  | { readonly kind: 'invalid'; readonly reason: string };

/** Every action the handler names, by field name (tcpSocket has no runnable action). */
function actionsOf(handler: V1LifecycleHandler): { named: string[]; actions: HookAction[] } {
  const named: string[] = [];
  const actions: HookAction[] = [];
  if (handler.exec !== undefined) {
    named.push('exec');
    actions.push({ kind: 'exec', command: handler.exec.command ?? [] });
  }
  if (handler.httpGet !== undefined) {
    named.push('httpGet');
    actions.push(httpGetActionOf(handler.httpGet, ''));
  }
  if (handler.sleep !== undefined) {
    named.push('sleep');
    actions.push({ kind: 'sleep', seconds: handler.sleep.seconds });
  }
  if (handler.tcpSocket !== undefined) named.push('tcpSocket');
  return { named, actions };
}

/** The action of a handler that is present; `invalid` when it cannot run. */
export function parseHandler(handler: V1LifecycleHandler): HookAction {
  const { named, actions } = actionsOf(handler);
  const [action, ...more] = actions;
  if (named.length > 1) return { kind: 'invalid', reason: `the handler names more than one action (${named.join(', ')})` };
  if (handler.tcpSocket !== undefined) return { kind: 'invalid', reason: 'tcpSocket is not supported as a lifecycle handler' };
  if (action === undefined || more.length > 0) return { kind: 'invalid', reason: 'the handler names no action (exec, httpGet or sleep)' };
  if (action.kind === 'sleep' && !(Number.isInteger(action.seconds) && action.seconds >= 0)) {
    return { kind: 'invalid', reason: `sleep seconds must be a non-negative integer, got ${String(action.seconds)}` };
  }
  return action;
}

/** The container's hook of that kind, parsed; undefined when the container has none. */
export function hookOf(container: V1Container, kind: HookKind): HookAction | undefined {
  const handler = container.lifecycle?.[kind];
  return handler === undefined ? undefined : parseHandler(handler);
}
