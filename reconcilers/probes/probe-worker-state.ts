/**
 * One probe worker's decisions, as pure functions (the kubelet's prober worker, `doProbe`):
 *
 * - A worker follows one probe of one container name; a new container ID (a restart) resets it
 *   and publishes the probe's initial value: readiness `failure` (not ready until it succeeds),
 *   liveness `success`, startup `unknown`. Not for a container that was running before the agent
 *   started (the kubelet's restart grace): it has no result until its first probe reaches a
 *   threshold, so status generation keeps a Ready pod's readiness meanwhile.
 * - No probe while the container is not running (readiness becomes `failure`); the worker ends
 *   when the pod is terminal, or when the container terminated and will not restart.
 * - When the pod is being deleted, liveness and startup publish `success` and end (a quiet
 *   shutdown: nothing restarts a container that is being stopped).
 * - No probe before `initialDelaySeconds` from the container's start; liveness and readiness wait
 *   for the startup probe to succeed, and the startup probe stops once the container started.
 * - A result is published only after `successThreshold` / `failureThreshold` identical results in
 *   a row. After a liveness or startup failure the worker holds until a new container ID appears.
 */
import { predatesAgent } from './container-readiness.js';
import type { ProbeSettings, ProbeType } from './probe-spec.js';

export type ProbeResult = 'success' | 'failure' | 'unknown';

/** What the worker can see of its container on one tick. */
export interface ProbeTargetView {
  readonly nowMs: number;
  /** The pod reached Succeeded or Failed. */
  readonly podTerminal: boolean;
  /** The pod has a deletionTimestamp. */
  readonly podDeleting: boolean;
  /** When the agent started (containers running since before it publish no initial value). */
  readonly agentStartedAtMs?: number;
  /** The container as last reported; undefined before it was ever created. */
  readonly container?: {
    readonly id: string;
    readonly state: 'running' | 'waiting' | 'terminated';
    readonly startedAtMs?: number;
    /** The container's `started` flag (its startup probe succeeded, or it has none). */
    readonly started: boolean;
    /** A terminated container's restart policy runs it again after its exit code (the kubelet's `ContainerShouldRestart`). */
    readonly restarts?: boolean;
  };
}

export interface ProbeWorkerState {
  readonly containerId: string;
  readonly lastResult: ProbeResult | undefined;
  /** How many identical results in a row. */
  readonly resultRun: number;
  /** After a liveness or startup failure: no probing until a new container. */
  readonly onHold: boolean;
}

export const INITIAL_WORKER_STATE: ProbeWorkerState = { containerId: '', lastResult: undefined, resultRun: 0, onHold: false };

/** What to do on one tick. */
export type ProbeTick =
  | { readonly kind: 'stop'; readonly publish?: ProbeResult }
  | { readonly kind: 'skip'; readonly state: ProbeWorkerState; readonly publish?: ProbeResult }
  | { readonly kind: 'probe'; readonly state: ProbeWorkerState; readonly publish?: ProbeResult };

/** The result a probe reports for a container it has not probed yet. */
export function initialResult(type: ProbeType): ProbeResult {
  if (type === 'readiness') return 'failure';
  if (type === 'liveness') return 'success';
  return 'unknown';
}

/**
 * Follows the container the view shows: a new container ID resets the worker and publishes the
 * initial value, unless the container was running before the agent started.
 */
function follow(settings: ProbeSettings, state: ProbeWorkerState, view: ProbeTargetView & { container: { id: string } }): { next: ProbeWorkerState; publish?: ProbeResult } {
  const c = view.container;
  if (c.id === state.containerId) return { next: state };
  const next = { containerId: c.id, lastResult: undefined, resultRun: 0, onHold: false };
  const found = c.state === 'running' && predatesAgent(c.startedAtMs, view.agentStartedAtMs);
  return found ? { next } : { next, publish: initialResult(settings.type) };
}

/** Whether a running container is due a probe of this type now (initial delay passed, startup gating). */
function due(settings: ProbeSettings, c: NonNullable<ProbeTargetView['container']>, nowMs: number): boolean {
  if (c.startedAtMs === undefined || nowMs - c.startedAtMs < settings.initialDelayMs) return false;
  // Liveness and readiness wait for the startup probe; the startup probe stops once started.
  return c.started ? settings.type !== 'startup' : settings.type === 'startup';
}

/** Decides one tick of the worker. `publish` is a result to record for the current container. */
export function decideTick(settings: ProbeSettings, state: ProbeWorkerState, view: ProbeTargetView): ProbeTick {
  if (view.podTerminal) return { kind: 'stop' };
  const c = view.container;
  if (c === undefined || c.id === '') return { kind: 'skip', state };
  const { next, publish } = follow(settings, state, { ...view, container: c });
  const withPublish = publish === undefined ? {} : { publish };
  if (next.onHold) return { kind: 'skip', state: next, ...withPublish };
  if (c.state !== 'running') {
    if (c.state === 'terminated' && c.restarts !== true) return { kind: 'stop', publish: 'failure' };
    return { kind: 'skip', state: next, publish: 'failure' };
  }
  if (view.podDeleting && settings.type !== 'readiness') return { kind: 'stop', publish: 'success' };
  return { kind: due(settings, c, view.nowMs) ? 'probe' : 'skip', state: next, ...withPublish };
}

/** Folds one probe result into the worker's state; `publish` is set once a threshold is reached. */
export function applyResult(settings: ProbeSettings, state: ProbeWorkerState, result: ProbeResult): { state: ProbeWorkerState; publish?: ProbeResult } {
  const resultRun = state.lastResult === result ? state.resultRun + 1 : 1;
  const next = { ...state, lastResult: result, resultRun };
  if ((result === 'failure' && resultRun < settings.failureThreshold) || (result === 'success' && resultRun < settings.successThreshold)) {
    return { state: next };
  }
  if (result === 'failure' && settings.type !== 'readiness') {
    // The container will be restarted: hold until a new container ID appears.
    return { state: { ...next, onHold: true, resultRun: 0 }, publish: result };
  }
  return { state: next, publish: result };
}
