/**
 * What every kind of run (sync, terminate, clean up) does the same way: read the pod's runtime
 * state, hand a generated status to the status manager, and note the runtime state the run
 * reported so PLEG drops its echo.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from '../../cri/types.js';
import type { PodKey } from '../../util/pod-key.js';
import type { ObservedPod } from '../model/observed-pod.js';
import { observedFingerprint } from '../model/runtime-sightings.js';
import { observeKnownPod, observePod, type KnownRuntimeObjects } from '../runtime/observe-pod.js';
import { generatePodStatus } from '../status/generate-pod-status.js';
import type { PodReconcilerOptions } from './reconciler-deps.js';

/** One reconcile's view: the pod's key, its logger and the run's cancellation signal. */
export interface RunScope {
  readonly key: PodKey;
  readonly log: Logger;
  readonly signal: AbortSignal | undefined;
}

/** What a Failed status says; `disruption` adds the kubelet's DisruptionTarget condition (eviction). */
export interface TerminalReason {
  readonly reason: string;
  readonly message: string;
  readonly disruption?: boolean;
  /** The DisruptionTarget condition's message; absent: the status message. */
  readonly disruptionMessage?: string;
}

/** How a status is generated: terminal or not, why, and the pod as allocated when it differs from the desired one. */
export interface StatusHow {
  readonly podIsTerminal: boolean;
  readonly terminalReason?: TerminalReason;
  readonly allocated?: V1Pod;
}

export function callOptionsOf(scope: RunScope): CallOptions {
  return scope.signal === undefined ? {} : { signal: scope.signal };
}

/** The objects of an observation, by ID. */
export function knownObjectsOf(observed: ObservedPod): KnownRuntimeObjects {
  return { sandboxIds: observed.sandboxes.map((s) => s.id), containers: observed.containers.map((c) => ({ id: c.id, podSandboxId: c.sandboxId })) };
}

/** The pod's sandboxes and containers as the runtime lists them now. */
export function observe(deps: PodReconcilerOptions, scope: RunScope): Promise<ObservedPod> {
  return observePod(deps.runtime, scope.key.uid, deps.nodeName, callOptionsOf(scope));
}

/** The objects of `observed` as they are now, read by ID (for a run that created nothing). */
export function observeKnown(deps: PodReconcilerOptions, scope: RunScope, observed: ObservedPod): Promise<ObservedPod> {
  return observeKnownPod(deps.runtime, scope.key.uid, knownObjectsOf(observed), callOptionsOf(scope));
}

/** Notes the runtime state this run reported (its status was written from it, or it removed everything). */
export function reported(deps: PodReconcilerOptions, observed: ObservedPod): void {
  deps.sightings?.reported(observed.uid, observedFingerprint(observed));
}

/**
 * Generates the pod's status and hands it to the status manager, which writes it in the
 * background (the run does not wait for the API server); returns it.
 */
export function writeStatus(deps: PodReconcilerOptions, scope: RunScope, run: { pod: V1Pod; observed: ObservedPod; how: StatusHow }): V1PodStatus {
  // A cancelled run hands over nothing: the run that replaced it reports the newer state.
  scope.signal?.throwIfAborted();
  const status = statusOf(deps, run.pod, run.observed, run.how);
  deps.status.setPodStatus(run.pod, status);
  return status;
}

export function statusOf(deps: PodReconcilerOptions, pod: V1Pod, observed: ObservedPod, how: StatusHow): ReturnType<typeof generatePodStatus> {
  const now = new Date(Math.floor(deps.clock.now() / 1000) * 1000);
  return generatePodStatus({
    // The status reports the pod as allocated (its containers' allocatedResources and resources).
    pod: how.allocated ?? pod,
    observed,
    nodeIp: deps.nodeIp,
    runtimeName: deps.runtimeName,
    now,
    startFailures: deps.startFailures.of(observed.uid),
    podIsTerminal: how.podIsTerminal,
    ...previousStatusOf(deps, observed.uid),
    ...(how.terminalReason === undefined ? {} : { terminalReason: how.terminalReason }),
    probeResults: deps.probeResults.resultsOf(observed.uid),
    ...(deps.agentStartedAtMs === undefined ? {} : { agentStartedAtMs: deps.agentStartedAtMs }),
    ...(deps.recursiveReadOnlyOf === undefined ? {} : { recursiveReadOnlyOf: deps.recursiveReadOnlyOf }),
    ...resizeStatusOf(deps, observed.uid),
  });
}

/** The last status handed over for the pod, when the status manager holds one (else generation reads the API's). */
function previousStatusOf(deps: PodReconcilerOptions, uid: string): Pick<Parameters<typeof generatePodStatus>[0], 'previousStatus'> {
  const held = deps.heldStatus?.(uid);
  return held === undefined ? {} : { previousStatus: held };
}

function resizeStatusOf(deps: PodReconcilerOptions, uid: string): Pick<Parameters<typeof generatePodStatus>[0], 'currentValuesOf' | 'resizeConditions'> {
  const resizer = deps.resizer;
  return resizer === undefined ? {} : { currentValuesOf: resizer.currentOf(uid), resizeConditions: resizer.conditionsOf(uid) };
}
