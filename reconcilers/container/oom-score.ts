/**
 * Each container's `oom_score_adj`, as the kubelet sets it (`pkg/kubelet/qos/policy.go`
 * `GetContainerOOMScoreAdjust`), so the kernel's OOM killer picks victims by QoS under node memory
 * pressure: node-critical pods and Guaranteed pods last (-997), BestEffort first (1000), Burstable
 * in between by the share of node memory the container requests (`1000 - 1000 * request /
 * capacity`, kept within 3..999). A sidecar (an init container with `restartPolicy: Always`) is
 * never easier to kill than the pod's regular container that requests least. Pod-level resources
 * are not supported by nodelet yet, so only container requests count.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { podQosClass } from '../model/qos.js';
import { parseQuantity } from '../model/quantity.js';

const GUARANTEED_OOM_SCORE_ADJ = -997;
const BEST_EFFORT_OOM_SCORE_ADJ = 1000;
/** The lowest priority of a critical pod (`scheduling.SystemCriticalPriority`). */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** A critical pod of the node's own (`system-node-critical`), as the kubelet's `IsNodeCriticalPod`. */
function isNodeCritical(pod: V1Pod): boolean {
  return pod.spec?.priorityClassName === 'system-node-critical' && (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

function memoryRequest(container: V1Container): number {
  const request = container.resources?.requests?.memory;
  return request === undefined ? 0 : parseQuantity(request);
}

function isSidecar(pod: V1Pod, container: V1Container): boolean {
  return container.restartPolicy === 'Always' && (pod.spec?.initContainers ?? []).some((c) => c.name === container.name);
}

/** The kubelet's heuristic for one request: integer arithmetic, as in Go. */
function burstableScore(requestBytes: number, capacityBytes: number): number {
  return 1000 - Math.trunc((1000 * requestBytes) / capacityBytes);
}

/** The `oom_score_adj` of `container` in `pod` on a node with `memoryCapacityBytes` of memory. */
export function containerOomScoreAdj(pod: V1Pod, container: V1Container, memoryCapacityBytes: number): number {
  if (isNodeCritical(pod)) return GUARANTEED_OOM_SCORE_ADJ;
  const qos = podQosClass(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BEST_EFFORT_OOM_SCORE_ADJ;
  let score = burstableScore(memoryRequest(container), memoryCapacityBytes);
  if (isSidecar(pod, container)) {
    const regular = pod.spec?.containers ?? [];
    const least = regular.length === 0 ? 0 : Math.min(...regular.map(memoryRequest));
    score = Math.min(score, burstableScore(least, memoryCapacityBytes));
  }
  if (score < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (score === BEST_EFFORT_OOM_SCORE_ADJ) return score - 1;
  return score;
}
