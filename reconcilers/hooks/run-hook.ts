/**
 * Runs one lifecycle hook action once, as the kubelet's `handlerRunner.Run` does, and says whether
 * it succeeded (with the kubelet's failure message when not):
 *
 * - exec: the command runs in the container through the runtime's `ExecSync`; exit code 0 is
 *   success. The timeout handed to ExecSync is the caller's bound (preStop: what is left of the
 *   grace period); postStart passes 0, "no timeout", as the kubelet does (the CRI client's default
 *   deadline still bounds the call).
 * - httpGet: a GET to `scheme://host:port/path`, host defaulting to the pod IP, a named port looked
 *   up in the container's ports, an empty one meaning 80; the action's headers plus
 *   `User-Agent: kube-lifecycle/<version>` and `Accept: *\/*` unless given. Only a failed request
 *   (no connection, a broken or silent answer) fails the hook: like the kubelet, which checks the
 *   transport error and not the status code, any HTTP answer — even a 500 — is success. An HTTPS
 *   hook whose server answers in plain HTTP is tried again over HTTP (without an `Authorization`
 *   header); when that succeeds, the hook succeeds, `kubelet_lifecycle_handler_http_fallbacks_total`
 *   counts it and a Warning `LifecycleHTTPFallback` event says so, as the kubelet's
 *   `runHTTPHandler`; when it fails, the hook fails with the HTTPS error.
 * - sleep: waits `seconds` on the injected clock.
 * - invalid: fails at once with "Cannot run handler".
 *
 * Every action stops when `signal` aborts: the runtime call and the HTTP request are cancelled,
 * the sleep's timer cleared, and the run rejects with the abort (never a hook failure: a cancelled
 * run records nothing). Otherwise it never rejects.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { resolvePort } from '../probes/run-probe.js';
import { errorMessage } from '../model/sync-errors.js';
import { execExitError, execHookFailure, httpHookFailure, invalidHandlerFailure } from './hook-messages.js';
import type { HookAction } from './hook-spec.js';
import { httpGet, isHttpResponseToHttpsClient } from './http-get.js';
import { FOLLOWED_KUBERNETES_MINOR } from '../../util/kubernetes-release.js';

/** `kube-lifecycle/<major>.<minor>`, the kubelet's user agent for lifecycle requests. */
export const LIFECYCLE_USER_AGENT = `kube-lifecycle/${FOLLOWED_KUBERNETES_MINOR}`;
/**
 * How long a postStart httpGet may stay silent. The kubelet sets none and cancels a running hook
 * when the pod is deleted; nodelet's per-pod queue cannot interrupt a running sync for a deletion,
 * so a silent server is bounded like an exec hook is (the CRI client's default deadline, 60 s).
 */
export const POST_START_HTTP_TIMEOUT_MS = 60_000;

/** What a hook runs against. */
export interface HookTarget {
  readonly pod: V1Pod;
  readonly container: V1Container;
  readonly containerId: string;
  /** The pod's primary IP, the default host of an httpGet hook; empty when unknown. */
  readonly podIp: string;
}

/** What the node counts of lifecycle hooks (its `/metrics`). */
export interface LifecycleMetrics {
  /** An HTTPS hook fell back to HTTP and succeeded (`kubelet_lifecycle_handler_http_fallbacks_total`). */
  httpFallback(): void;
  /** A sleep hook was ended before its time was up (`kubelet_sleep_action_terminated_early_total`); absent: not counted. */
  sleepTerminatedEarly?(): void;
}

export interface HookRunnerDeps {
  readonly runtime: RuntimeService;
  readonly clock: Clock;
  /** Where the `LifecycleHTTPFallback` event goes; absent: not recorded. */
  readonly events?: EventRecorder;
  readonly lifecycleMetrics?: LifecycleMetrics;
}

/** The event of an HTTPS hook that succeeded over HTTP, in the kubelet's words. */
export const LIFECYCLE_HTTP_FALLBACK = 'LifecycleHTTPFallback';

export interface HookRun {
  readonly action: HookAction;
  readonly target: HookTarget;
  /** Cancels the run. */
  readonly signal?: AbortSignal | undefined;
  /** Bound on an exec (its ExecSync timeout) and an HTTP request; undefined: postStart's. */
  readonly timeoutSeconds?: number;
}

export type HookOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string };

const OK: HookOutcome = { ok: true };

function failed(message: string): HookOutcome {
  return { ok: false, message };
}

/** Runs the hook once; rejects only when `run.signal` aborts it. */
export async function runHook(deps: HookRunnerDeps, run: HookRun): Promise<HookOutcome> {
  run.signal?.throwIfAborted();
  const { action } = run;
  switch (action.kind) {
    case 'exec':
      return abortable(runExec(deps, run, action.command), run.signal);
    case 'httpGet':
      return abortable(runHttpGet(deps, run, action), run.signal);
    case 'sleep':
      try {
        await sleep(deps.clock, action.seconds * 1000, run.signal);
      } catch (error) {
        // As the kubelet's runSleepHandler: its context ended first (grace period over, run cancelled).
        deps.lifecycleMetrics?.sleepTerminatedEarly?.();
        throw error;
      }
      return OK;
    case 'invalid':
      return failed(invalidHandlerFailure(action.reason));
  }
}

async function runExec(deps: HookRunnerDeps, run: HookRun, command: readonly string[]): Promise<HookOutcome> {
  const { pod, container, containerId } = run.target;
  const failure = (error: string, output: string): HookOutcome => failed(execHookFailure({ pod, containerName: container.name, command, error, output }));
  try {
    const result = await deps.runtime.execSync(containerId, command, run.timeoutSeconds ?? 0, run.signal === undefined ? {} : { signal: run.signal });
    if (result.exitCode === 0) return OK;
    const output = Buffer.concat([result.stdout, result.stderr]).toString('utf8');
    return failure(execExitError(command, result.exitCode, result.stderr.toString('utf8')), output);
  } catch (error) {
    if (run.signal?.aborted === true) throw error;
    return failure(errorMessage(error), '');
  }
}

type HttpGetAction = Extract<HookAction, { kind: 'httpGet' }>;

/** `scheme://host:port/path` of the hook, or why it has none. */
export function hookUrl(action: HttpGetAction, target: HookTarget): { url: string } | { error: string } {
  const port = action.port === '' ? 80 : resolvePort(action.port, target.container);
  if (port === undefined) return { error: `couldn't find port: ${String(action.port)} in container ${target.container.name}` };
  const host = action.host === '' ? target.podIp : action.host;
  if (host === '') return { error: 'failed to find networking container: the pod has no IP' };
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const path = action.path === '' || action.path.startsWith('/') ? action.path : `/${action.path}`;
  return { url: `${action.scheme.toLowerCase()}://${hostPart}:${port}${path}` };
}

/** The action's headers plus the kubelet's User-Agent and Accept unless the action sets them. */
export function hookHeaders(action: HttpGetAction): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, value } of action.headers) headers[name] = value;
  const has = (name: string): boolean => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('user-agent')) headers['User-Agent'] = LIFECYCLE_USER_AGENT;
  if (!has('accept')) headers.Accept = '*/*';
  return headers;
}

async function runHttpGet(deps: HookRunnerDeps, run: HookRun, action: HttpGetAction): Promise<HookOutcome> {
  const { pod, container } = run.target;
  const failure = (error: string): HookOutcome => failed(httpHookFailure({ pod, containerName: container.name, path: action.path, error }));
  const target = hookUrl(action, run.target);
  if ('error' in target) return failure(target.error);
  const timeoutMs = run.timeoutSeconds === undefined ? POST_START_HTTP_TIMEOUT_MS : run.timeoutSeconds * 1000;
  const headers = hookHeaders(action);
  try {
    await httpGet({ url: target.url, headers, timeoutMs, signal: run.signal });
    return OK;
  } catch (error) {
    if (run.signal?.aborted === true) throw error;
    if (isHttpResponseToHttpsClient(error) && (await fellBackToHttp(deps, run, { url: target.url, headers, timeoutMs }))) return OK;
    return failure(`Get "${target.url}": ${errorMessage(error)}`);
  }
}

/** `host:port` of a hook URL, as Go's `URL.Host` (the port always written by {@link hookUrl}). */
function hostPort(url: string): string {
  const match = /^[a-z]+:\/\/([^/]*)/i.exec(url);
  return match?.[1] ?? '';
}

/**
 * The kubelet's retry of an HTTPS hook answered in plain HTTP: the same request over HTTP without
 * `Authorization`. True when it succeeded (counted, and the Warning event recorded).
 */
async function fellBackToHttp(deps: HookRunnerDeps, run: HookRun, request: { url: string; headers: Record<string, string>; timeoutMs: number }): Promise<boolean> {
  const host = hostPort(request.url);
  // hookUrl writes the scheme in lower case and the port explicitly: only the scheme changes.
  const url = `http://${request.url.slice('https://'.length)}`;
  const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => name.toLowerCase() !== 'authorization'));
  try {
    await httpGet({ url, headers, timeoutMs: request.timeoutMs, signal: run.signal });
  } catch (error) {
    if (run.signal?.aborted === true) throw error;
    return false;
  }
  deps.lifecycleMetrics?.httpFallback();
  deps.events?.record(run.target.pod, { type: 'Warning', reason: LIFECYCLE_HTTP_FALLBACK, message: `request to HTTPS lifecycle hook ${host} got HTTP response, retry with HTTP succeeded` });
  return true;
}

/** The abort reason of a signal, as an Error. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('the hook was cancelled', { cause: reason });
}

/** Settles like `work`, or rejects with the abort reason as soon as `signal` aborts. */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Waits `ms` on the clock; rejects with the abort reason (timer cleared) when `signal` aborts first. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      reject(signal === undefined ? new Error('aborted') : abortReason(signal));
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
