/**
 * Why a pod's newest sandbox cannot be used, in the kubelet's words (`PodSandboxChanged`,
 * kuberuntime/util/util.go, v1.37): the sync creates a new one, and the pod's
 * `PodReadyToStartContainers` condition is False with reason `PodSandboxNotReady` and this message.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ObservedSandbox } from './observed-pod.js';

/** The condition's reason while a sandbox is needed (the kubelet's `PodSandboxNotReadyReason`). */
export const POD_SANDBOX_NOT_READY = 'PodSandboxNotReady';

/**
 * The kubelet's message for why a new sandbox is needed, or `undefined` when the newest is usable.
 * `sandboxes` are newest first. (The kubelet's network-namespace-mode check has no case here: a
 * pod's `hostNetwork` cannot change, and nodelet's sandboxes are made from the pod's spec.)
 */
export function sandboxChangeReason(pod: V1Pod, sandboxes: readonly ObservedSandbox[]): string | undefined {
  const latest = sandboxes[0];
  if (latest === undefined) return 'no pod sandbox exists';
  if (sandboxes.filter((s) => s.state === 'SANDBOX_READY').length > 1) return 'multiple pod sandboxes are ready and need to be reconciled';
  if (latest.state !== 'SANDBOX_READY') return 'pod sandbox is not ready';
  if (pod.spec?.hostNetwork !== true && latest.ip === '') return 'pod sandbox has no IP address';
  return undefined;
}
