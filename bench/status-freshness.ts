/**
 * Status freshness on one agent's node: how long after a container exits its pod's status in the
 * API says so. K pods (restartPolicy Never) whose container exits on its own after it starts, so
 * the exits do not coincide; per pod: the wall-clock time a watch first saw the container
 * terminated in the API minus the exit time the node's runtime recorded (CRI
 * ContainerStatus.finishedAt, nanoseconds; the same machine's clock).
 *
 * Both agents see an exit at their next relist of the runtime, about once a second, so an exit
 * waits a share of that period which depends only on where in it the exit falls: its phase. The
 * exits are set at fixed points of the host's clock, one relist period P apart plus P/K
 * (`exitAtUptime`), so the K exits of a run fall at K evenly spread phases of the relist period
 * whatever its offset: the run's p50 is then half the period plus the agent's own delay. P is the
 * agent's own mean relist interval over a few seconds before the run, from the
 * `kubelet_pleg_relist_interval_seconds` histogram both agents serve (the bench prints it per
 * run: 1002 to 1003 ms on either agent in the run of docs/benchmarks.md). Spaced by a nominal
 * 1 + 1/K s instead, the exits step through the period by 1/K of it only when it is exactly 1 s,
 * and cover less of it the further it is from that. Timed from each container's start instead,
 * the phases followed the pods' start times, and the p50 of 20 exits moved from run to run on
 * either agent (nodelet's from 0.43 to 0.74 s over the three rounds of the run f19966b reports).
 * A container reads the host's `/proc/uptime` (runc gives it no time namespace) and sleeps until
 * its point.
 */
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { AgentNode } from './agent-node.js';
import { benchPod, createNamespace, deleteAndWait, pause, waitUntil } from './agent-startup.js';
import { seriesTotal } from './exposition.js';
import { PodTracker } from './pod-tracker.js';

export interface FreshnessOptions {
  readonly kubeConfig: KubeConfig;
  readonly node: AgentNode;
  readonly pods: number;
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
}

/** Seconds from the pods' create to the first planned exit: time enough for every pod of a run to start. */
export const EXIT_LEAD_SECONDS = 10;

/** How long the agent's relist interval is averaged over before a run. */
const RELIST_SAMPLE_MS = 5000;

/**
 * When pod `i` of `pods` exits, in seconds of the host's uptime: from `first`, one relist period
 * apart plus `1 / pods` of it, so exit `i` falls `i / pods` of a period later in the relist's
 * phase than the first. Pure.
 */
export function exitAtUptime(first: number, i: number, pods: number, relistPeriodSeconds: number): number {
  return first + i * relistPeriodSeconds * (1 + 1 / pods);
}

/** Sum and count of one histogram (every label set) in a Prometheus text exposition, or undefined when absent. Pure. */
export function histogramTotals(exposition: string, name: string): { readonly sum: number; readonly count: number } | undefined {
  const sum = seriesTotal(exposition, `${name}_sum`);
  const count = seriesTotal(exposition, `${name}_count`);
  return sum === undefined || count === undefined ? undefined : { sum, count };
}

/** The node agent's mean relist interval over the next few seconds, in seconds (its PLEG metrics, through the API server's node proxy). */
async function relistPeriodSeconds(core: CoreV1Api, nodeName: string): Promise<number> {
  const read = async (): Promise<{ readonly sum: number; readonly count: number }> => {
    const totals = histogramTotals(await core.connectGetNodeProxyWithPath({ name: nodeName, path: 'metrics' }), 'kubelet_pleg_relist_interval_seconds');
    if (totals === undefined) throw new Error(`node ${nodeName} serves no kubelet_pleg_relist_interval_seconds`);
    return totals;
  };
  const before = await read();
  await pause(RELIST_SAMPLE_MS);
  const after = await read();
  if (after.count - before.count < 2) throw new Error(`node ${nodeName} relisted ${after.count - before.count} times in ${RELIST_SAMPLE_MS} ms`);
  return (after.sum - before.sum) / (after.count - before.count);
}

/** The container's script: sleep until the host's uptime reaches `uptime` (at once when it has). */
export function sleepUntilUptimeScript(uptime: number): string {
  return `sleep $(awk -v t=${uptime.toFixed(2)} '{ d = t - $1; print (d > 0 ? d : 0) }' /proc/uptime)`;
}

/** The host's uptime in seconds (`/proc/uptime`, the clock the containers read), with the wall-clock time it was read at. */
async function readUptime(): Promise<{ readonly uptime: number; readonly epochMs: number }> {
  const text = await readFile('/proc/uptime', 'utf8');
  const epochMs = Date.now();
  const uptime = Number.parseFloat(text.split(' ')[0] ?? '');
  if (!Number.isFinite(uptime)) throw new Error(`cannot read the host's uptime from /proc/uptime: ${JSON.stringify(text)}`);
  return { uptime, epochMs };
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
    const period = await relistPeriodSeconds(core, node.nodeName);
    const now = await readUptime();
    const planned = names.map((_, i) => exitAtUptime(now.uptime + EXIT_LEAD_SECONDS, i, pods, period));
    await Promise.all(names.map((name, i) => core.createNamespacedPod({ namespace, body: benchPod({ namespace, name, nodeName: node.nodeName, script: sleepUntilUptimeScript(planned[i] ?? 0), restartPolicy: 'Never' }) })));
    await waitUntil(`${pods} containers terminated in the API`, () => names.every((n) => tracker.terminatedAt.has(n)), timeoutMs);
    const exits = await exitTimesMs(node, namespace);
    const result = names.map((name) => {
      const seen = tracker.terminatedAt.get(name);
      const exited = exits.get(name);
      if (seen === undefined || exited === undefined) throw new Error(`no exit time of ${namespace}/${name} in the runtime of ${node.nodeName}`);
      return performance.timeOrigin + seen - exited;
    });
    log(`${node.target}: exits ${(period * 1000).toFixed(0)} ms (its relist interval) + 1/${pods} of it apart; the largest distance of one from its planned time ${Math.round(largestMiss(names, exits, planned, now))} ms`);
    log(`${node.target}: slowest to the API: ${slowestExits(names, result, exits, SLOWEST_SHOWN)}`);
    await deleteAndWait({ core, node, tracker, namespace, names, timeoutMs });
    return result;
  } finally {
    tracker.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}

/** How many of a run's slowest exits the log names (to find them in the agent's log). */
const SLOWEST_SHOWN = 3;

/**
 * The `count` slowest exits of a run, slowest first, as "<pod> <delay> ms (exited <ISO time>)":
 * the pod and the runtime's exit time find a slow one's sync in the agent's log. Pure.
 */
export function slowestExits(names: readonly string[], delaysMs: readonly number[], exitsMs: ReadonlyMap<string, number>, count: number): string {
  return names
    .map((name, i) => ({ name, delay: delaysMs[i] ?? 0, exited: exitsMs.get(name) ?? 0 }))
    .sort((a, b) => b.delay - a.delay)
    .slice(0, count)
    .map((e) => `${e.name} ${Math.round(e.delay)} ms (exited ${new Date(e.exited).toISOString()})`)
    .join(', ');
}

/** The largest distance, in milliseconds, of an exit from its planned time: large when a pod started after its point. */
function largestMiss(names: readonly string[], exits: ReadonlyMap<string, number>, planned: readonly number[], now: { readonly uptime: number; readonly epochMs: number }): number {
  return Math.max(...names.map((name, i) => Math.abs((exits.get(name) ?? 0) - (now.epochMs + ((planned[i] ?? 0) - now.uptime) * 1000))));
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
