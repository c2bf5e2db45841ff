/**
 * Pods with a `RestartAllContainers` restart rule are refused: the kubelet (1.36+, the beta
 * `RestartAllContainersOnContainerExits`, on by default) restarts every container of such a pod in
 * place when the rule matches, and nodelet does not implement that. Refusing at admission (phase
 * Failed, a Warning event, nothing started) is visible; running the pod while ignoring the rule
 * would leave it looking healthy with part of its spec ignored.
 */
import type { V1Container } from '@kubernetes/client-node';
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';
import { RESTART_ALL_CONTAINERS_ACTION } from '../model/restart-policy.js';

export const RESTART_ALL_CONTAINERS_REASON = 'RestartAllContainersNotSupported';

function usesRestartAll(container: V1Container): boolean {
  return (container.restartPolicyRules ?? []).some((rule) => rule.action === RESTART_ALL_CONTAINERS_ACTION);
}

export function restartAllContainersAdmitHandler(): PodAdmitHandler {
  return {
    name: 'restart-all-containers',
    admit: ({ pod }): AdmitResult => {
      const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
      const names = containers.filter(usesRestartAll).map((c) => c.name);
      if (names.length === 0) return ADMITTED;
      return {
        admit: false,
        reason: RESTART_ALL_CONTAINERS_REASON,
        message: `the restartPolicyRules action RestartAllContainers (container ${names.join(', ')}) is not supported by nodelet`,
      };
    },
  };
}
