/**
 * Status freshness on one agent's node: how long after a container exits its pod's status in the
 * API says so. K pods (restartPolicy Never) whose container exits on its own after it starts, so
 * the exits do not coincide; per pod: the wall-clock time a watch first saw the container
 * terminated in the API minus the exit time the node's runtime recorded (CRI
 * ContainerStatus.finishedAt, nanoseconds; the same machine's clock).
 *
 * Both agents see an exit at their next relist of the runtime, once a second. The pods start
 * together, so exits whole seconds apart would all meet the relist at one phase: one sample, not
 * K. The run times are spread over the relist period instead (2.0, 3.2, 4.4, 5.6, 6.8 s, …), so
 * the K pods sample its phases evenly.
 */
import { performance } from 'node:perf_hooks';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { AgentNode } from './agent-node.js';
import { benchPod, createNamespace, deleteAndWait, waitUntil } from './agent-startup.js';
import { PodTracker } from './pod-tracker.js';

export interface FreshnessOptions {
  readonly kubeConfig: KubeConfig;
  readonly node: AgentNode;
  readonly pods: number;
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
}

/** How long pod `i` of `pods` runs: whole seconds apart, plus `i / pods` of the one-second relist period. */
export function exitAfterSeconds(i: number, pods: number): string {
  return (2 + i + i / pods).toFixed(2);
}

/** Per pod, exit → seen in the API, in milliseconds. */
export async function benchStatusFreshness(options: FreshnessOptions): Promise<number[]> {
  const { kubeConfig, node, pods, timeoutMs, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = await createNamespace(core, `${node.target}-fresh`);
  const tracker = new PodTracker(kubeConfig, namespace);
  await tracker.start();
  const names = Array.from({ length: pods }, (_, i) => `fresh-${i}`);
  try {
    log(`${node.target}: status freshness over ${pods} pods in ${namespace}`);
    await Promise.all(names.map((name, i) => core.createNamespacedPod({ namespace, body: benchPod({ namespace, name, nodeName: node.nodeName, script: `sleep ${exitAfterSeconds(i, pods)}`, restartPolicy: 'Never' }) })));
    await waitUntil(`${pods} containers terminated in the API`, () => names.every((n) => tracker.terminatedAt.has(n)), timeoutMs);
    const exits = await exitTimesMs(node, namespace);
    const result = names.map((name) => {
      const seen = tracker.terminatedAt.get(name);
      const exited = exits.get(name);
      if (seen === undefined || exited === undefined) throw new Error(`no exit time of ${namespace}/${name} in the runtime of ${node.nodeName}`);
      return performance.timeOrigin + seen - exited;
    });
    await deleteAndWait({ core, node, tracker, namespace, names, timeoutMs });
    return result;
  } finally {
    tracker.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}

/** Pod name → when its container exited, by the runtime (epoch milliseconds). */
async function exitTimesMs(node: AgentNode, namespace: string): Promise<Map<string, number>> {
  const containers = await node.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': namespace } });
  const exits = new Map<string, number>();
  for (const container of containers) {
    const status = await node.runtime.containerStatus(container.id);
    const pod = container.labels['io.kubernetes.pod.name'];
    if (pod !== undefined && status.finishedAt > 0n) exits.set(pod, Number(status.finishedAt / 1000n) / 1000);
  }
  return exits;
}
