/**
 * What one accepted hostile pod ended as, in the kubelet's vocabulary (pure: a pod and its events
 * in, an outcome out). An outcome is settled when the pod runs, has ended, shows a container
 * reason the kubelet uses for a broken container (waiting or terminated), or is held creating with
 * a Warning event the kubelet emits for that (FailedMount, FailedCreatePodSandBox, ...). Every
 * settled outcome also needs at least one event for the pod. A pod Pending with no such reason is
 * not settled: after the run's timeout it counts as a failure (silently wrong).
 */
import type { CoreV1Event, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

/** Waiting reasons of a container the kubelet cannot run (`kuberuntime`, `images`, `container` packages). */
export const WAITING_REASONS: ReadonlySet<string> = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'PreCreateHookError',
  'RunContainerError',
  'PreStartHookError',
  'PostStartHookError',
  'InvalidImageName',
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'ImageInspectError',
  'CrashLoopBackOff',
  'ContainerStatusUnknown',
]);

/** Terminated reasons (the runtime's and the kubelet's). */
export const TERMINATED_REASONS: ReadonlySet<string> = new Set(['Error', 'Completed', 'OOMKilled', 'StartError', 'ContainerCannotRun', 'DeadlineExceeded', 'ContainerStatusUnknown']);

/** Reasons of a pod the kubelet refused or ended (admission and pod-level), besides `OutOf<resource>`. */
export const POD_REASONS: ReadonlySet<string> = new Set([
  'UnexpectedAdmissionError',
  'SysctlForbidden',
  'NodeAffinity',
  'NodePorts',
  'PodOSNotSupported',
  'PodOSSelectorNodeLabelDoesNotMatch',
  'AppArmor',
  'SupplementalGroupsPolicyNotSupported',
  'TaintToleration',
  'DeadlineExceeded',
  'Evicted',
  'Forbidden',
  'InitContainerRestartPolicyForbidden',
  'PodLevelResourcesNotSupported',
]);

/** Warning events that explain a pod held in ContainerCreating/PodInitializing. */
export const HELD_EVENT_REASONS: ReadonlySet<string> = new Set([
  'FailedMount',
  'FailedAttachVolume',
  'FailedCreatePodSandBox',
  'FailedCreatePodContainer',
  'FailedPrepareDynamicResources',
  'FailedToRetrieveImagePullSecret',
  'FailedSync',
  'DNSConfigForming',
]);

/** One pod's outcome; `settled: false` means it has no kubelet-compatible reason (yet). */
export interface Outcome {
  readonly settled: boolean;
  /** The histogram key: `Running`, `Failed:<reason>`, `<container reason>`, `ContainerCreating+<event>`; what is missing when not settled. */
  readonly reason: string;
}

function isPodReason(reason: string | undefined): boolean {
  return reason !== undefined && (POD_REASONS.has(reason) || /^OutOf[a-zA-Z0-9.\-/]+$/.test(reason));
}

function statuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

/** The first container reason of the vocabulary (waiting first: it says what happens now). */
function containerReason(pod: V1Pod): string | undefined {
  const all = statuses(pod);
  const waiting = all.map((s) => s.state?.waiting?.reason).find((r) => r !== undefined && WAITING_REASONS.has(r));
  if (waiting !== undefined) return waiting;
  return all.map((s) => s.state?.terminated?.reason).find((r) => r !== undefined && TERMINATED_REASONS.has(r));
}

function endedReason(pod: V1Pod): string | undefined {
  const phase = pod.status?.phase;
  if (phase !== 'Failed' && phase !== 'Succeeded') return undefined;
  const reason = pod.status?.reason;
  if (isPodReason(reason)) return `${phase}:${reason ?? ''}`;
  if (reason !== undefined && reason !== '') return `${phase}:unknown-pod-reason(${reason})`;
  return `${phase}:${containerReason(pod) ?? 'no-container-reason'}`;
}

function allRunning(pod: V1Pod): boolean {
  const regular = pod.status?.containerStatuses ?? [];
  return pod.status?.phase === 'Running' && regular.length > 0 && regular.every((s) => s.state?.running !== undefined);
}

/** Classifies `pod` from its status and the events recorded for it. */
export function classifyPod(pod: V1Pod, events: readonly CoreV1Event[]): Outcome {
  const ended = endedReason(pod);
  const found = ended ?? (allRunning(pod) ? 'Running' : undefined) ?? containerReason(pod) ?? heldReason(events);
  if (found === undefined) {
    const waiting = statuses(pod).map((s) => s.state?.waiting?.reason ?? '').filter((r) => r !== '');
    return { settled: false, reason: `${pod.status?.phase ?? 'no phase'} without a reason (waiting: ${waiting.join(',') || 'none'}; events: ${events.map((e) => e.reason).join(',') || 'none'})` };
  }
  if (found.includes('unknown-pod-reason') || found.endsWith('no-container-reason')) return { settled: false, reason: found };
  if (events.length === 0) return { settled: false, reason: `${found} without any event` };
  return { settled: true, reason: found };
}

function heldReason(events: readonly CoreV1Event[]): string | undefined {
  const warning = events.find((e) => e.type === 'Warning' && HELD_EVENT_REASONS.has(e.reason ?? ''));
  return warning === undefined ? undefined : `ContainerCreating+${warning.reason ?? ''}`;
}
