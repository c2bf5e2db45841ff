/**
 * End to end: the kubelet's critical pod admission. A `system-node-critical` pod that does not fit
 * the node's allocatable CPU beside a running pod is admitted by preempting that pod, which reports
 * Failed, `Preempting`, with the kubelet's DisruptionTarget condition and a Warning event, and whose
 * container stops in the runtime; the critical pod runs; `kubelet_preemptions` counts it. Asserted
 * on the API, the node's /metrics and with crictl.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimeContainers, waitForPhase } from './helpers.js';

const CRITICAL = `e2e-critical-${Date.now()}`;

/** Millicores of a CPU quantity (`1`, `500m`). */
function milli(q: string | undefined): number {
  if (q === undefined) return 0;
  return q.endsWith('m') ? Number(q.slice(0, -1)) : Math.round(Number(q) * 1000);
}

/** CPU the node can still give: allocatable less what the node's unfinished pods request (containers summed). */
async function freeMilliCpu(): Promise<number> {
  const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as { status: { allocatable: Record<string, string> } };
  const pods = (JSON.parse(await kubectl(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${NODE_NAME}`, '-o', 'json'])) as { items: V1Pod[] }).items;
  const used = pods
    .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
    .reduce((sum, p) => sum + (p.spec?.containers ?? []).reduce((s, c) => s + milli(c.resources?.requests?.cpu), 0), 0);
  return milli(node.status.allocatable.cpu) - used;
}

/** `kubelet_preemptions{preemption_signal="cpu"}` on the node's /metrics (0 before the first). */
async function cpuPreemptions(): Promise<number> {
  const text = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]);
  const line = text.split('\n').find((l) => l.startsWith('kubelet_preemptions{preemption_signal="cpu"} '));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

function sleeper(namespace: string, name: string, cpu: string, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], resources: { requests: { cpu } } }],
      ...extra,
    },
  };
}

describe('critical pod admission on nodelet', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-preempt');
  });

  after(async () => {
    await kubectl(['delete', 'pod', '-n', 'kube-system', CRITICAL, '--ignore-not-found', '--wait=true']);
    if (ns !== '') await deleteNamespace(ns);
  });

  it('preempts a running pod to admit a system-node-critical pod that does not fit', async () => {
    const free = await freeMilliCpu();
    assert.ok(free > 800, `the node has ${free}m CPU free`);
    await apply(sleeper(ns, 'victim', `${free - 200}m`));
    const victim = await waitForPhase(ns, 'victim', 'Running');
    const victimUid = victim.metadata?.uid ?? '';
    const countedBefore = await cpuPreemptions();
    await apply(sleeper('kube-system', CRITICAL, '600m', { priorityClassName: 'system-node-critical' }));
    const preempted = await eventually('the victim Failed', async () => {
      const p = await getPod(ns, 'victim');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(preempted.status?.reason, 'Preempting');
    assert.equal(preempted.status?.message, 'Preempted in order to admit critical pod');
    const target = preempted.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual([target?.status, target?.reason, target?.message], ['True', 'TerminationByKubelet', 'Pod was preempted by Kubelet to accommodate a critical pod.']);
    const events = (await podEvents(ns, 'victim')).filter((e) => e.reason === 'Preempting');
    assert.deepEqual(events.map((e) => [e.type, e.message]), [['Warning', 'Preempted in order to admit critical pod']]);
    const critical = await waitForPhase('kube-system', CRITICAL, 'Running');
    assert.equal(critical.status?.reason, undefined, 'the critical pod was not rejected');
    await eventually("the victim's container stopped in the runtime", async () => {
      const containers = await runtimeContainers(victimUid);
      return containers.every((c) => c.state !== 'CONTAINER_RUNNING') ? true : undefined;
    });
    const running = await runtimeContainers(critical.metadata?.uid ?? '');
    assert.deepEqual(running.map((c) => c.state), ['CONTAINER_RUNNING']);
    assert.equal(await cpuPreemptions(), countedBefore + 1, 'kubelet_preemptions{preemption_signal="cpu"} counted the one victim');
  });
});
