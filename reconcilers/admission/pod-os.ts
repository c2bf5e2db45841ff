/**
 * The kubelet's OS-field check (part of its predicate admit handler): a pod whose `spec.os.name`
 * is not this node's OS is rejected (phase Failed, `PodOSNotSupported`) instead of being started
 * with the wrong kind of containers. A pod without `spec.os` is admitted.
 */
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';

export const POD_OS_NOT_SUPPORTED_REASON = 'PodOSNotSupported';
export const POD_OS_NOT_SUPPORTED_MESSAGE = "Failed to admit pod as the OS field doesn't match node OS";

/** `nodeOs`: Go's `runtime.GOOS` of the node, `linux` for every node nodelet runs on. */
export function podOsAdmitHandler(nodeOs = 'linux'): PodAdmitHandler {
  return {
    name: 'pod-os',
    admit: ({ pod }): AdmitResult => {
      const os = pod.spec?.os?.name;
      if (os === undefined || os === nodeOs) return ADMITTED;
      return { admit: false, reason: POD_OS_NOT_SUPPORTED_REASON, message: POD_OS_NOT_SUPPORTED_MESSAGE };
    },
  };
}
