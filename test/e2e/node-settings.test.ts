/**
 * End to end: the node's own settings, changed live through the NodeAgent, as a kubelet's
 * configuration would set them.
 *
 * - `crashLoopBackOff.maxContainerRestartPeriod: 2s`: a crash-looping container restarts about
 *   every 2 s (with the kubelet's default maximum of 5 min the waits are 10, 20, 40 s …: at most 3
 *   restarts in the 45 s this test watches), each BackOff event names the 2 s wait, and each restart
 *   is a new container in the runtime.
 * - `systemReserved` / `kubeReserved`: the Node's allocatable drops by both at once; a pod that
 *   would have fit before is rejected `OutOfcpu` against the new allocatable; a container's
 *   `resourceFieldRef` default (no limit) is the new allocatable memory.
 * - `imagePulls` with a registry pull rate of no tokens: a pull fails `ErrImagePull` with the
 *   kubelet's "pull QPS exceeded" and never reaches the runtime; with the default rate restored,
 *   the next attempt does.
 * Every setting is restored afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import {
  NODE_NAME,
  apply,
  busyboxPod,
  containersOf,
  createNamespace,
  deleteNamespace,
  eventually,
  getPod,
  kubectl,
  podEvents,
  requireCluster,
  sandboxesOf,
  waitForPhase,
} from './helpers.js';
import { patchNodeAgentSpec, waitNodeAgentSettingsApplied } from './nodeagent-spec.js';
import { parseMilliCpu } from '../../reconcilers/model/quantity.js';

async function readNode(): Promise<V1Node> {
  return JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
}

function kiBytes(quantity: string): number {
  assert.match(quantity, /^\d+Ki$/, 'memory reported in Ki');
  return Number(quantity.slice(0, -2)) * 1024;
}

describe('node settings applied live from the NodeAgent', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-nodeset');
  });

  after(async () => {
    await patchNodeAgentSpec({ crashLoopBackOff: null, systemReserved: null, kubeReserved: null, imagePulls: null }).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('restarts a crash-looping container every 2 s with crashLoopBackOff.maxContainerRestartPeriod: 2s', { timeout: 120_000 }, async () => {
    await patchNodeAgentSpec({ crashLoopBackOff: { maxContainerRestartPeriod: '2s' } });
    await waitNodeAgentSettingsApplied();
    await apply(busyboxPod({ name: 'crasher', namespace, script: 'exit 1' }));
    const started = Date.now();
    const waits = new Set<string>();
    const pod = await eventually('5 restarts of the crashing container', async () => {
      const p = await getPod(namespace, 'crasher');
      const waiting = p?.status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.reason === 'CrashLoopBackOff') waits.add(waiting.message ?? '');
      return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 5 ? p : undefined;
    }, 45_000);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    assert.ok(waits.size > 0, 'seen waiting in CrashLoopBackOff');
    for (const message of waits) assert.match(message, /^back-off 2s restarting failed container=main pod=crasher_/);
    const backOffs = (await podEvents(namespace, 'crasher')).filter((e) => e.reason === 'BackOff');
    assert.ok(backOffs.length > 0, 'BackOff events');
    const containers = await containersOf(pod.metadata?.uid ?? '');
    assert.ok(containers.length >= 2, `the runtime holds the current and a dead instance, got ${containers.length}`);
    console.log(`crasher: restartCount 5 reached in ${seconds} s; waiting messages seen: ${[...waits].map((m) => m.split(' restarting')[0] ?? '').join(', ')}; BackOff events: ${backOffs.length}; runtime containers: ${containers.length}`);
  });

  it('lowers the Node allocatable by systemReserved and kubeReserved, and admits against it', { timeout: 120_000 }, async () => {
    const before = await readNode();
    const capacityCpu = parseMilliCpu(before.status?.capacity?.cpu ?? '0');
    const capacityMemory = kiBytes(before.status?.capacity?.memory ?? '0Ki');
    // Allocatable memory is already below capacity by the hard memory.available threshold.
    const memoryBefore = kiBytes(before.status?.allocatable?.memory ?? '0Ki');
    assert.equal(parseMilliCpu(before.status?.allocatable?.cpu ?? '0'), capacityCpu, 'nothing reserved before');
    await patchNodeAgentSpec({ systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReserved: { cpu: '250m', memory: '512Mi' } });
    await waitNodeAgentSettingsApplied();
    const reserved = await eventually('the Node allocatable lowered by both reservations', async () => {
      const node = await readNode();
      return parseMilliCpu(node.status?.allocatable?.cpu ?? '0') === capacityCpu - 750 ? node : undefined;
    }, 30_000);
    const allocatableMemory = kiBytes(reserved.status?.allocatable?.memory ?? '0Ki');
    assert.equal(allocatableMemory, memoryBefore - 1.5 * 2 ** 30);
    assert.equal(reserved.status?.capacity?.cpu, before.status?.capacity?.cpu, 'capacity unchanged');

    // A request 50m over the new allocatable's free CPU: rejected, though it fits the capacity.
    const requested = capacityCpu - 750 + 50;
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'over-reserved', namespace },
      spec: { nodeName: NODE_NAME, restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], resources: { requests: { cpu: `${requested}m` } } }] },
    });
    const failed = await eventually('over-reserved Failed', async () => {
      const p = await getPod(namespace, 'over-reserved');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(failed.status?.reason, 'OutOfcpu');
    const message = failed.status?.message ?? '';
    const match = /used: (\d+), capacity: (\d+)$/.exec(message);
    assert.ok(match !== null, message);
    const used = Number(match[1]);
    assert.equal(Number(match[2]), capacityCpu - 750, 'checked against the reserved allocatable');
    assert.ok(requested + used <= capacityCpu, `would have fit without the reservations (requested ${requested}m, used ${used}m, capacity ${capacityCpu}m)`);
    assert.deepEqual(await sandboxesOf(failed.metadata?.uid ?? ''), [], 'never started');

    // The resourceFieldRef default of a container without a memory limit: the new allocatable.
    const env = [{ name: 'MEMORY_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } }];
    await apply(busyboxPod({ name: 'allocatable-env', namespace, script: 'echo "memory=$MEMORY_MI"; sleep 3600', env }));
    await waitForPhase(namespace, 'allocatable-env', 'Running');
    const logs = await eventually('the env line', async () => {
      const out = await kubectl(['logs', '-n', namespace, 'allocatable-env']);
      return out.includes('memory=') ? out : undefined;
    });
    const memoryMi = Number(/memory=(\d+)/.exec(logs)?.[1]);
    assert.equal(memoryMi, Math.ceil(allocatableMemory / 2 ** 20));
    console.log(`reserved cpu 750m, memory 1.5Gi: allocatable cpu ${capacityCpu}m → ${capacityCpu - 750}m, memory ${memoryBefore / 2 ** 20} Mi → ${allocatableMemory / 2 ** 20} Mi (capacity ${capacityMemory / 2 ** 20} Mi); ${message}; resourceFieldRef limits.memory default ${memoryMi} Mi`);

    await patchNodeAgentSpec({ systemReserved: null, kubeReserved: null });
    await waitNodeAgentSettingsApplied();
    await eventually('allocatable back to capacity', async () => {
      const node = await readNode();
      return parseMilliCpu(node.status?.allocatable?.cpu ?? '0') === capacityCpu ? true : undefined;
    }, 30_000);
  });

  it('fails a pull over the registry pull rate with ErrImagePull "pull QPS exceeded"', { timeout: 240_000 }, async () => {
    await patchNodeAgentSpec({ imagePulls: { registryPullQPS: 0.01, registryBurst: 0 } });
    await waitNodeAgentSettingsApplied();
    // Always: a pull is attempted even though the image is present.
    await apply(busyboxPod({ name: 'throttled', namespace, script: 'sleep 3600', pullPolicy: 'Always' }));
    const failed = await eventually('the pull refused by the rate', async () => {
      const events = await podEvents(namespace, 'throttled');
      return events.find((e) => e.reason === 'Failed' && (e.message ?? '').includes('pull QPS exceeded'));
    }, 60_000);
    assert.equal(failed.message, 'Failed to pull image "busybox:1.35": pull QPS exceeded');
    const pod = await getPod(namespace, 'throttled');
    const waiting = pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
    assert.ok(waiting === 'ErrImagePull' || waiting === 'ImagePullBackOff', `waiting ${waiting ?? 'none'}`);
    assert.deepEqual(await containersOf(pod?.metadata?.uid ?? ''), [], 'no container in the runtime');
    const refusals = (await podEvents(namespace, 'throttled')).filter((e) => e.reason === 'Failed').map((e) => e.message ?? '');
    assert.deepEqual([...new Set(refusals)], [failed.message], 'every pull so far refused by the rate, none sent to the runtime');

    // With the default rate back, the next attempt reaches the runtime: it fails there, since
    // docker.io pulls go to a closed loopback port in the test cluster (never out of the machine).
    await patchNodeAgentSpec({ imagePulls: null });
    await waitNodeAgentSettingsApplied();
    const reached = await eventually('a pull that reached the runtime', async () => {
      const events = await podEvents(namespace, 'throttled');
      return events.find((e) => e.reason === 'Failed' && (e.message ?? '').startsWith('Failed to pull image "busybox:1.35": PullImage: '));
    }, 90_000);
    console.log(`throttled: "${failed.message ?? ''}"; with the default rate the next pull reached the runtime: "${(reached.message ?? '').slice(0, 120)}…"`);
  });
});
