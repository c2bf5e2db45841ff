/**
 * Host ports at admission (the scheduler's `nodeports` plugin, run again by the kubelet): a pod
 * whose app containers ask for a host port another admitted pod already has is rejected. Two
 * ports clash when protocol and port are equal and the host IPs overlap: equal, or either one
 * unset or `0.0.0.0` (every address). Only app containers count, as in the kubelet.
 */
import type { V1ContainerPort, V1Pod } from '@kubernetes/client-node';

interface HostPort {
  readonly ip: string;
  readonly protocol: string;
  readonly port: number;
}

const ANY_IP = '0.0.0.0';

/** The host ports the pod's app containers ask for. */
export function hostPortsOf(pod: V1Pod): HostPort[] {
  const ports: V1ContainerPort[] = (pod.spec?.containers ?? []).flatMap((c) => c.ports ?? []);
  return ports
    .filter((p) => (p.hostPort ?? 0) > 0)
    .map((p) => ({ ip: p.hostIP === undefined || p.hostIP === '' ? ANY_IP : p.hostIP, protocol: p.protocol ?? 'TCP', port: p.hostPort ?? 0 }));
}

function clash(a: HostPort, b: HostPort): boolean {
  return a.port === b.port && a.protocol === b.protocol && (a.ip === ANY_IP || b.ip === ANY_IP || a.ip === b.ip);
}

/** True when none of the pod's host ports clashes with one of `otherPods`. */
export function hostPortsFree(pod: V1Pod, otherPods: readonly V1Pod[]): boolean {
  const wanted = hostPortsOf(pod);
  if (wanted.length === 0) return true;
  const used = otherPods.flatMap(hostPortsOf);
  return !wanted.some((w) => used.some((u) => clash(w, u)));
}
