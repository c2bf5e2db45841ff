/**
 * Admission under node pressure, as the kubelet's eviction manager admits pods: while the Node
 * reports MemoryPressure alone, BestEffort pods are refused unless they tolerate the memory-pressure
 * taint; under DiskPressure or PIDPressure every pod is refused. Critical pods (system-critical
 * priority, static and mirror pods) are always admitted. The conditions are read from the Node this
 * agent last posted, which the eviction manager refreshes as soon as its conditions change.
 */
import type { V1Node, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { podQosClass } from '../model/qos.js';
import { ADMITTED, type PodAdmitHandler } from './admit.js';
import { tolerates } from './taints.js';

/** The reason of a pod refused (or evicted) under pressure. */
export const EVICTED_REASON = 'Evicted';

/** Whether a pod status shows an evicted pod (the kubelet's `eviction.PodIsEvicted`): Failed, reason Evicted. */
export function isEvictedStatus(status: V1PodStatus | undefined): boolean {
  return status?.phase === 'Failed' && status.reason === EVICTED_REASON;
}

const PRESSURE_TYPES: readonly string[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

/** The kubelet's system-critical priority: such pods are never refused or evicted. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** The kubelet's IsCriticalPod: static and mirror pods, and pods of system-critical priority. */
export function isCriticalPod(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.['kubernetes.io/config.source'];
  const mirror = pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
  return (pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY || mirror || (source !== undefined && source !== 'api');
}

/** The pressure conditions the Node reports True, in the kubelet's order. */
export function pressureConditions(node: V1Node): string[] {
  const conditions = node.status?.conditions ?? [];
  return PRESSURE_TYPES.filter((type) => conditions.some((c) => c.type === type && c.status === 'True'));
}

/** The kubelet's wording: `The node had condition: [MemoryPressure]. ` (Go's %v of a slice). */
export function nodeConditionMessage(conditions: readonly string[]): string {
  return `The node had condition: [${conditions.join(' ')}]. `;
}

const MEMORY_PRESSURE_TAINT = { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' } as const;

export function nodePressureAdmitHandler(): PodAdmitHandler {
  return {
    name: 'NodePressure',
    admit({ pod, node }) {
      const conditions = pressureConditions(node);
      if (conditions.length === 0 || isCriticalPod(pod)) return ADMITTED;
      if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
        if (podQosClass(pod) !== 'BestEffort') return ADMITTED;
        if ((pod.spec?.tolerations ?? []).some((t) => tolerates(t, MEMORY_PRESSURE_TAINT))) return ADMITTED;
      }
      return { admit: false, reason: EVICTED_REASON, message: nodeConditionMessage(conditions) };
    },
  };
}
