/**
 * computePodActions: the pure decision of one reconcile. Given the desired pod and what the runtime
 * reports, it says what to kill and what to start, with a reason for each, and nothing else. The
 * executor performs the plan; `generatePodStatus` reports the result. Semantics follow the
 * kubelet's `computePodActions` (pkg/kubelet/kuberuntime/kuberuntime_manager.go):
 *
 * - The sandbox is recreated when there is none, when the newest one is not ready, when more than
 *   one is ready, or when a pod-network sandbox lost its IP. Recreating it kills the pod first.
 * - A pod with restartPolicy Never whose containers have already run never gets a new sandbox: it
 *   is done, whatever happened to its old sandbox.
 * - A container is started when it has never run, or when it exited (or is in an unknown or
 *   created-but-not-started state) and its restart policy says so: its `restartPolicyRules` on
 *   the exit code, else its own `restartPolicy`, else the pod's (`model/restart-policy.ts`).
 * - A running container whose spec hash no longer matches the pod's is killed and started again,
 *   whatever the policies (as the kubelet). Running containers not in the spec are killed.
 * - A running container whose liveness or startup probe failed is killed (with the probe's own
 *   grace period, if it has one) and started again unless its own restartPolicy, or else the
 *   pod's, is Never.
 * - A sidecar with a startup probe holds back the containers after it until the probe succeeds.
 * - When nothing runs and nothing is to be started, the pod is killed (its sandbox stopped); its
 *   exited containers stay for their logs and status.
 * - An ephemeral container (`kubectl debug`) is started once, when the sandbox is ready and the
 *   runtime has no instance of it, even before initialization completes; it is never restarted,
 *   never killed for a spec change, and does not keep the pod alive (`ephemeral-containers.ts`).
 * - A running container an allocated resize must restart (its resizePolicy says RestartContainer
 *   for a changed resource: `resize/compute-resize-actions.ts`) is killed and started again.
 * - A pod restarting all its containers in place (a container exited with a code whose rule's
 *   action is `RestartAllContainers`: the caller decides it, `model/restart-all.ts`) only has every
 *   init and regular container stopped and removed, its sandbox kept (`compute-restart-all.ts`).
 * - A container the runtime has no instance of starts with the restart count its log directory
 *   gives (the kubelet's `calcRestartCountByLogDir`), so a pod restarted in place counts on.
 * - A terminating pod (deleted, or past its deadline) is only ever killed.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { computeInitActions, initContainersForNewSandbox } from './compute-init-actions.js';
import { hashContainerSpec } from '../model/container-hash.js';
import { ephemeralContainersOf, ephemeralContainersToStart } from './ephemeral-containers.js';
import type { ObservedContainer, ObservedPod } from '../model/observed-pod.js';
import { NO_PROBE_VERDICTS, type ProbeFailure, type ProbeVerdicts } from '../probes/probe-verdicts.js';
import type { ContainerToKill, ContainerToStart, PodActions } from './pod-actions.js';
import { hasRuntimeObjects, latestContainer, nextRestartCount } from '../model/observed-pod.js';
import { planRestartAll } from './compute-restart-all.js';
import { sandboxChangeReason } from '../model/sandbox-change.js';
import { containerShouldRestart, restartsAfterProbeKill, skipsSucceededOnNewSandbox } from '../model/restart-policy.js';

export interface ComputePodActionsInput {
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  /** The pod is being deleted or has reached a terminal phase: kill, never start. */
  readonly terminating: boolean;
  /** Probe results; none when absent. */
  readonly probes?: ProbeVerdicts;
  /** Running containers an allocated resize restarts (RestartContainer policy): runtime ID → the Killing message. */
  readonly resizeRestarts?: ReadonlyMap<string, string>;
  /**
   * The pod restarts all its containers in place now (the kubelet's AllContainersRestarting
   * condition, `restartsAllContainersNow`): they are removed and nothing else happens. Absent: no.
   */
  readonly restartAllContainers?: boolean;
  /** For containers the runtime has no instance of: the restart count their log directory gives (see `ContainerToStart.restartCount`). */
  readonly logRestartCounts?: ReadonlyMap<string, number>;
}

const NO_ACTIONS: Omit<PodActions, 'killPod' | 'killPodReason'> = {
  createSandbox: false,
  sandboxId: undefined,
  sandboxAttempt: 0,
  containersToKill: [],
  containersToReset: [],
  containersToStart: [],
  initialized: false,
};

/** Whether an exited (or never-started) container should run again under its and the pod's policy. */
function shouldRestart(pod: V1Pod, spec: V1Container, container: ObservedContainer | undefined): boolean {
  if (container === undefined) return true;
  switch (container.state) {
    case 'CONTAINER_RUNNING':
      return false;
    case 'CONTAINER_CREATED':
    case 'CONTAINER_UNKNOWN':
      return true;
    case 'CONTAINER_EXITED':
      return containerShouldRestart(spec, pod.spec, container.exitCode);
  }
}

function containersOf(pod: V1Pod): readonly V1Container[] {
  return pod.spec?.containers ?? [];
}

function hasReadySandbox(observed: ObservedPod): boolean {
  return observed.sandboxes.some((s) => s.state === 'SANDBOX_READY');
}

/** The plan when the sandbox must be (re)created: kill what is left, then start every container that should run. */
function planNewSandbox(input: ComputePodActionsInput, reason: string): PodActions {
  const { pod, observed } = input;
  const attempt = observed.sandboxes[0] === undefined ? 0 : observed.sandboxes[0].attempt + 1;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  const hasRun = observed.containers.length > 0;
  if (policy === 'Never' && hasRun) {
    return { ...NO_ACTIONS, killPod: hasReadySandbox(observed), killPodReason: 'pod has run to completion' };
  }
  const hasInit = (pod.spec?.initContainers ?? []).length > 0;
  const containersToStart = hasInit
    ? initContainersForNewSandbox(pod, observed, input.logRestartCounts)
    : containersOf(pod).flatMap((c, index): ContainerToStart[] => {
        const latest = latestContainer(observed, c.name);
        if (skipsSucceededOnNewSandbox(c, pod.spec) && latest?.state === 'CONTAINER_EXITED' && latest.exitCode === 0) return [];
        return [{ kind: 'regular', index, name: c.name, reason: `sandbox recreated: ${reason}`, restartCount: nextRestartCount(observed, c.name, input.logRestartCounts) }];
      });
  if (containersToStart.length === 0) {
    // Nothing left to run (OnFailure, every container succeeded): no new sandbox for nothing.
    return { ...NO_ACTIONS, killPod: hasReadySandbox(observed), killPodReason: 'pod has run to completion' };
  }
  return {
    ...NO_ACTIONS,
    killPod: hasRuntimeObjects(observed),
    killPodReason: `sandbox changed: ${reason}`,
    createSandbox: true,
    sandboxAttempt: attempt,
    containersToStart,
    initialized: !hasInit,
  };
}

interface ContainerDecision {
  readonly kill?: ContainerToKill;
  readonly start?: ContainerToStart;
  readonly keepsRunning: boolean;
}

/** The kill of a running container whose liveness or startup probe failed, and its restart unless its policy is Never. */
function probeFailureDecision(pod: V1Pod, spec: V1Container, c: { latest: ObservedContainer; failure: ProbeFailure; start: ContainerToStart }): ContainerDecision {
  const { latest, failure, start } = c;
  const restarts = restartsAfterProbeKill(spec, pod.spec);
  const what = `Container ${latest.name} failed ${failure.type} probe`;
  const kill: ContainerToKill = {
    id: latest.id,
    name: latest.name,
    reason: `failed ${failure.type} probe`,
    eventMessage: restarts ? `${what}, will be restarted` : what,
    ...(failure.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: failure.gracePeriodSeconds }),
  };
  return restarts ? { kill, start, keepsRunning: false } : { kill, keepsRunning: false };
}

/** A running container: kept, or killed (and started again per policy) for a probe failure, a resize restart or a spec change. */
function runningContainerDecision(input: ComputePodActionsInput, c: { spec: V1Container; index: number; latest: ObservedContainer; restartCount: number }): ContainerDecision {
  const { pod } = input;
  const { spec, index, latest, restartCount } = c;
  const failure = input.probes?.failures.get(latest.id);
  if (latest.specHash === hashContainerSpec(spec) && failure !== undefined) {
    return probeFailureDecision(pod, spec, { latest, failure, start: { kind: 'regular', index, name: spec.name, reason: `failed ${failure.type} probe`, restartCount } });
  }
  const resizeRestart = input.resizeRestarts?.get(latest.id);
  if (latest.specHash === hashContainerSpec(spec) && resizeRestart !== undefined) {
    // As the kubelet: restarted whatever the pod's restartPolicy, to run with the allocated resources.
    const kill = { id: latest.id, name: spec.name, reason: 'resize requires restart', eventMessage: resizeRestart };
    return { kill, start: { kind: 'regular', index, name: spec.name, reason: 'resize requires restart', restartCount }, keepsRunning: false };
  }
  if (latest.specHash === hashContainerSpec(spec)) return { keepsRunning: true };
  // As the kubelet: a changed definition restarts the container whatever the restart policies.
  const kill = { id: latest.id, name: spec.name, reason: 'container spec changed' };
  return { kill, start: { kind: 'regular', index, name: spec.name, reason: 'container spec changed', restartCount }, keepsRunning: false };
}

function decideContainer(input: ComputePodActionsInput, spec: V1Container, index: number): ContainerDecision {
  const { pod, observed } = input;
  const latest = latestContainer(observed, spec.name);
  const restartCount = nextRestartCount(observed, spec.name, input.logRestartCounts);
  if (latest?.state === 'CONTAINER_RUNNING') return runningContainerDecision(input, { spec, index, latest, restartCount });
  if (!shouldRestart(pod, spec, latest)) return { keepsRunning: false };
  const reason = latest === undefined ? 'container never started' : `container ${latest.state === 'CONTAINER_EXITED' ? 'exited' : 'not running'}`;
  const start = { kind: 'regular' as const, index, name: spec.name, reason, restartCount };
  // A created-but-never-started or unknown container is removed from the way before starting anew.
  if (latest !== undefined && latest.state !== 'CONTAINER_EXITED') {
    return { kill: { id: latest.id, name: spec.name, reason: 'container not running' }, start, keepsRunning: false };
  }
  return { start, keepsRunning: false };
}

/**
 * Running containers that must not run: those whose name is not in the spec, and any instance of a
 * name that is not its newest (two reconciles that overlapped, e.g. after the queue lost its state,
 * may each have started one; only the newest counts).
 */
function extraRunningContainers(pod: V1Pod, observed: ObservedPod): ContainerToKill[] {
  const names = new Set([...containersOf(pod), ...(pod.spec?.initContainers ?? []), ...ephemeralContainersOf(pod)].map((c) => c.name));
  return observed.containers
    .filter((c) => c.state === 'CONTAINER_RUNNING')
    .flatMap((c): ContainerToKill[] => {
      if (!names.has(c.name)) return [{ id: c.id, name: c.name, reason: 'container is not in the pod spec' }];
      if (latestContainer(observed, c.name)?.id !== c.id) return [{ id: c.id, name: c.name, reason: 'a newer instance of the container runs' }];
      return [];
    });
}

/** Decides what one reconcile of the pod must do. Pure: same input, same plan. */
export function computePodActions(input: ComputePodActionsInput): PodActions {
  const { pod, observed, terminating } = input;
  if (terminating) {
    return { ...NO_ACTIONS, killPod: true, killPodReason: 'pod is terminating' };
  }
  const changeReason = sandboxChangeReason(pod, observed.sandboxes);
  if (input.restartAllContainers === true) return planRestartAll(pod, observed, changeReason);
  if (changeReason !== undefined) return planNewSandbox(input, changeReason);

  const sandboxId = observed.sandboxes[0]?.id;
  const init = computeInitActions(pod, observed, { probes: input.probes ?? NO_PROBE_VERDICTS, ...(input.logRestartCounts === undefined ? {} : { logRestartCounts: input.logRestartCounts }) });
  if (init.failed) return { ...NO_ACTIONS, killPod: true, killPodReason: 'init container failed and its restart policy does not restart it' };
  const unknown = extraRunningContainers(pod, observed);
  const ephemeral = ephemeralContainersToStart(pod, observed);
  if (!init.initialized) {
    return { ...NO_ACTIONS, killPod: false, killPodReason: '', sandboxId, containersToKill: [...init.containersToKill, ...unknown], containersToStart: [...ephemeral, ...init.containersToStart] };
  }
  const decisions = containersOf(pod).map((spec, index) => decideContainer(input, spec, index));
  const appStarts = decisions.flatMap((d) => (d.start ? [d.start] : []));
  // Sidecars and ephemeral containers do not keep a pod alive: once no app container runs or will run, the pod is done.
  if (!decisions.some((d) => d.keepsRunning) && appStarts.length === 0) {
    return { ...NO_ACTIONS, killPod: true, killPodReason: 'all containers have exited and none will restart', initialized: true };
  }
  return {
    ...NO_ACTIONS,
    killPod: false,
    killPodReason: '',
    sandboxId,
    containersToKill: [...init.containersToKill, ...decisions.flatMap((d) => (d.kill ? [d.kill] : [])), ...unknown],
    containersToStart: [...ephemeral, ...init.containersToStart, ...appStarts],
    initialized: true,
  };
}
