/**
 * Whether a container runs again after it exits: the kubelet's `ContainerShouldRestart`
 * (pkg/api/v1/pod/util.go) with `ContainerRestartRules` on (beta, on by default since 1.35).
 *
 * A container's own `restartPolicy` overrides the pod's; its `restartPolicyRules` are tried first,
 * in order, against the exit code, and the first that matches decides (`Restart`: it restarts;
 * `RestartAllContainers`: it restarts with every other container of the pod, in place, as
 * `restart-all.ts` describes). Without a matching rule the container's policy decides, and without
 * one the pod's.
 */
import type { V1Container, V1ContainerRestartRule, V1PodSpec } from '@kubernetes/client-node';

/** The rule action that restarts the container alone. */
export const RESTART_RULE_ACTION = 'Restart';
/** The rule action that restarts every container of the pod in place (the kubelet's RestartAllContainersOnContainerExits: `restart-all.ts`). */
export const RESTART_ALL_CONTAINERS_ACTION = 'RestartAllContainers';

/** The first of the container's rules whose exit codes match, as the kubelet's `FindMatchingContainerRestartRule`. */
export function matchingRestartRule(container: V1Container, exitCode: number): V1ContainerRestartRule | undefined {
  return (container.restartPolicyRules ?? []).find((rule) => {
    const codes = rule.exitCodes;
    if (codes === undefined) return false;
    const listed = (codes.values ?? []).includes(exitCode);
    if (codes.operator === 'In') return listed;
    if (codes.operator === 'NotIn') return !listed;
    return false;
  });
}

/** The pod-level answer: Always (the default) restarts, OnFailure restarts a failure, Never does not. */
function podPolicyRestarts(spec: V1PodSpec | undefined, exitCode: number): boolean {
  const policy = spec?.restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return exitCode !== 0;
  return true;
}

/** Whether the container, which exited with `exitCode`, is to run again. */
export function containerShouldRestart(container: V1Container, spec: V1PodSpec | undefined, exitCode: number): boolean {
  const own = container.restartPolicy;
  if (own === undefined) return podPolicyRestarts(spec, exitCode);
  const action = matchingRestartRule(container, exitCode)?.action;
  // An in-place restart of the whole pod runs this container again too.
  if (action === RESTART_RULE_ACTION || action === RESTART_ALL_CONTAINERS_ACTION) return true;
  switch (own) {
    case 'Always':
      return true;
    case 'OnFailure':
      return exitCode !== 0;
    case 'Never':
      return false;
    default:
      return podPolicyRestarts(spec, exitCode);
  }
}

/**
 * Whether a running container killed for a failed liveness or startup probe is started again: its
 * own policy when it has one (its rules are not consulted: it did not exit), else the pod's
 * (anything but Never), as the kubelet's computePodActions.
 */
export function restartsAfterProbeKill(container: V1Container, spec: V1PodSpec | undefined): boolean {
  const own = container.restartPolicy;
  if (own !== undefined) return own !== 'Never';
  return (spec?.restartPolicy ?? 'Always') !== 'Never';
}

/**
 * Whether a container whose last instance succeeded is skipped when a new sandbox starts the pod
 * again: the kubelet's `runOnce` (pod OnFailure, or the container's own OnFailure, overrides it).
 */
export function skipsSucceededOnNewSandbox(container: V1Container, spec: V1PodSpec | undefined): boolean {
  if (container.restartPolicy !== undefined) return container.restartPolicy === 'OnFailure';
  return spec?.restartPolicy === 'OnFailure';
}
