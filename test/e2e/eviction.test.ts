/**
 * End to end: eviction under node pressure (controllers/eviction) on the test cluster, with real,
 * bounded pressure, asserted in the API (Node conditions, pod status, admission) and the runtime.
 *
 * - Memory: the hard `memory.available` threshold is set live (NodeAgent `spec.eviction`) a margin
 *   below what is available now; a BestEffort pod then holds twice that margin in a process
 *   (`dd bs=…M count=1` blocked on a pipe keeps its buffer). MemoryPressure turns True, the
 *   hungry pod is Failed/Evicted with the kubelet's message and a DisruptionTarget condition, a
 *   Guaranteed pod beside it keeps its container (same ID, running, no restart), a new BestEffort
 *   pod is refused at admission, and MemoryPressure returns to False once the threshold is unset
 *   and the (shortened) transition period has passed; the Node's events say so once each
 *   (`NodeHasInsufficientMemory`, then `NodeHasSufficientMemory`, in `kubectl describe node`).
 * - Disk: the hard `nodefs.available` threshold is set a margin below the free space of the
 *   agent's root dir; a pod fills an emptyDir with twice the margin. DiskPressure turns True, the
 *   pod is evicted (ephemeral-storage) and its emptyDir is removed from disk.
 *
 * The machine is shared: the margins (400 MiB memory, 300 MiB disk) leave room for other work on
 * it, and the NodeAgent's eviction settings are always removed in `finally`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, busyboxPod, createNamespace, deleteNamespace, eventually, getPod, kubectl, requireCluster, runtimeContainers, sandboxesOf, uniqueName, waitForPhase } from './helpers.js';

const MiB = 1024 * 1024;
const AGENT_ROOT = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

/** Occurrences of each reason among nodelet's events about the Node (counts included). */
async function nodeEventCounts(): Promise<Map<string, number>> {
  const out = await kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Node,involvedObject.name=${NODE_NAME}`, '-o', 'json']);
  const counts = new Map<string, number>();
  for (const e of (JSON.parse(out) as { items: CoreV1Event[] }).items) {
    if (e.source?.component === 'nodelet') counts.set(e.reason ?? '', (counts.get(e.reason ?? '') ?? 0) + (e.count ?? 1));
  }
  return counts;
}

async function patchEviction(eviction: Record<string, unknown> | null): Promise<void> {
  await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec: { eviction } })]);
}

/** Waits until the NodeAgent reports its current generation applied (SettingsApplied=True). */
async function waitSettingsApplied(): Promise<void> {
  await eventually('the NodeAgent eviction settings applied', async () => {
    const agent = JSON.parse(await kubectl(['get', 'nodeagent', NODE_NAME, '-o', 'json'])) as { metadata: { generation: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] } };
    const applied = agent.status?.conditions?.find((c) => c.type === 'SettingsApplied')?.status === 'True';
    return agent.status?.observedGeneration === agent.metadata.generation && applied ? true : undefined;
  });
}

async function getNode(): Promise<V1Node> {
  return JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
}

function conditionStatus(node: V1Node, type: string): string | undefined {
  return node.status?.conditions?.find((c) => c.type === type)?.status;
}

/** memory.available as the kubelet (and nodelet) computes it: MemTotal − root cgroup working set. */
async function memoryAvailableBytes(): Promise<number> {
  const memTotal = Number(/MemTotal:\s+(\d+) kB/.exec(await readFile('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
  const usage = Number((await readFile('/sys/fs/cgroup/memory/memory.usage_in_bytes', 'utf8')).trim());
  const inactiveFile = Number(/^total_inactive_file (\d+)$/m.exec(await readFile('/sys/fs/cgroup/memory/memory.stat', 'utf8'))?.[1] ?? 0);
  return memTotal - Math.max(0, usage - inactiveFile);
}

async function nodefsAvailableBytes(): Promise<number> {
  const fs = await statfs(AGENT_ROOT);
  return fs.bavail * fs.bsize;
}

const ki = (bytes: number): string => `${Math.floor(bytes / 1024)}Ki`;

/** Samples the Node every 250 ms: when each pressure condition and taint was first seen. */
function watchNode(): { seen: Map<string, number>; stop: () => Promise<void> } {
  const seen = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const node = await getNode().catch(() => undefined);
      const now = Date.now();
      for (const c of node?.status?.conditions ?? []) if (c.status === 'True' && !seen.has(c.type)) seen.set(c.type, now);
      for (const t of node?.spec?.taints ?? []) if (!seen.has(`taint:${t.key}`)) seen.set(`taint:${t.key}`, now);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return { seen, stop: async () => { running = false; await loop; } };
}

function guaranteedPod(name: string, namespace: string): object {
  const pod = busyboxPod({ name, namespace, script: 'sleep 3600', nodeName: NODE_NAME }) as { spec: { containers: Record<string, unknown>[] } };
  const resources = { cpu: '50m', memory: '32Mi' };
  pod.spec.containers[0] = { ...pod.spec.containers[0], resources: { requests: resources, limits: resources } };
  return pod;
}

function disruptionTarget(pod: V1Pod): { status?: string; reason?: string; message?: string; lastTransitionTime?: Date | string } | undefined {
  return pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
}

/** Pods of the namespace that were evicted, in the order of their DisruptionTarget condition. */
async function evictedInOrder(namespace: string): Promise<string[]> {
  const pods = (JSON.parse(await kubectl(['get', 'pods', '-n', namespace, '-o', 'json'])) as { items: V1Pod[] }).items;
  const at = (p: V1Pod): number => new Date(disruptionTarget(p)?.lastTransitionTime ?? 0).getTime();
  return pods.filter((p) => p.status?.reason === 'Evicted' && disruptionTarget(p) !== undefined).sort((a, b) => at(a) - at(b)).map((p) => `${namespace}/${p.metadata?.name ?? ''}`);
}

async function waitEvicted(namespace: string, name: string, timeoutMs = 120_000): Promise<V1Pod> {
  return eventually(`pod ${namespace}/${name} to be Failed/Evicted`, async () => {
    const pod = await getPod(namespace, name);
    return pod?.status?.phase === 'Failed' && pod.status.reason === 'Evicted' ? pod : undefined;
  }, timeoutMs);
}

describe('eviction under node pressure', { timeout: 600_000 }, () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('evict');
  });

  after(async () => {
    await patchEviction(null).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('memory: evicts the hungry BestEffort pod, keeps the Guaranteed one, refuses new BestEffort pods, then clears MemoryPressure', async () => {
    const marginBytes = 400 * MiB;
    const guaranteed = await (async () => {
      await apply(guaranteedPod('guaranteed', namespace));
      return waitForPhase(namespace, 'guaranteed', 'Running');
    })();
    const [guaranteedBefore] = await runtimeContainers(guaranteed.metadata?.uid ?? '');
    assert.ok(guaranteedBefore?.state === 'CONTAINER_RUNNING', 'the Guaranteed pod runs');
    const watch = watchNode();
    const eventsBefore = await nodeEventCounts();
    try {
      const available = await memoryAvailableBytes();
      const threshold = ki(available - marginBytes);
      await patchEviction({ hard: { 'memory.available': threshold }, pressureTransitionPeriodSeconds: 20 });
      await waitSettingsApplied();
      assert.equal(conditionStatus(await getNode(), 'MemoryPressure'), 'False', 'no pressure before the hungry pod');
      const hungryMiB = (2 * marginBytes) / MiB;
      const startedAt = Date.now();
      await apply(busyboxPod({ name: 'hungry', namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: `dd if=/dev/zero bs=${hungryMiB}M count=1 | sleep 3600` }));
      await waitForPhase(namespace, 'hungry', 'Running');
      const runningAt = Date.now();
      await eventually('MemoryPressure=True on the Node', async () => (conditionStatus(await getNode(), 'MemoryPressure') === 'True' ? true : undefined), 120_000);
      const pressureAt = Date.now();
      // While the condition holds: a new BestEffort pod is refused at admission and never started.
      await apply(busyboxPod({ name: 'late', namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: 'sleep 3600' }));
      const hungry = await waitEvicted(namespace, 'hungry');
      const evictedAt = Date.now();
      assert.match(hungry.status?.message ?? '', /^The node was low on resource: memory\. Threshold quantity: \d+(Ki|Mi|Gi)?, available: \d+(Ki|Mi|Gi)?\. Container main was using \d+(Ki|Mi)?, request is 0, has larger consumption of memory\. $/);
      const target = disruptionTarget(hungry);
      assert.deepEqual({ status: target?.status, reason: target?.reason, message: target?.message }, { status: 'True', reason: 'TerminationByKubelet', message: hungry.status?.message });
      const late = await eventually('the late pod to be refused', async () => {
        const pod = await getPod(namespace, 'late');
        return pod?.status?.phase === 'Failed' ? pod : undefined;
      });
      assert.equal(late.status?.reason, 'Evicted');
      assert.equal(late.status?.message, 'Pod was rejected: The node had condition: [MemoryPressure]. ');
      assert.deepEqual(await sandboxesOf(late.metadata?.uid ?? ''), [], 'the refused pod never got a sandbox');
      // Once the API shows the eviction, the kubelet removes every dead container of the pod
      // (HandlePodReconcile); its status keeps their terminated states.
      await eventually("the evicted pod's dead containers removed", async () => ((await runtimeContainers(hungry.metadata?.uid ?? '')).length === 0 ? true : undefined), 30_000);
      const hungryAfter = await getPod(namespace, 'hungry');
      assert.ok((hungryAfter?.status?.containerStatuses ?? []).length > 0 && (hungryAfter?.status?.containerStatuses ?? []).every((c) => c.state?.terminated !== undefined), `the evicted pod's container statuses stay terminated: ${JSON.stringify(hungryAfter?.status?.containerStatuses?.map((c) => c.state))}`);
      assert.equal(hungryAfter?.status?.phase, 'Failed');
      // The Guaranteed pod is untouched: same container, still running, never restarted.
      const [guaranteedAfter] = await runtimeContainers(guaranteed.metadata?.uid ?? '');
      assert.equal(guaranteedAfter?.id, guaranteedBefore.id);
      assert.equal(guaranteedAfter?.state, 'CONTAINER_RUNNING');
      const guaranteedPodAfter = await getPod(namespace, 'guaranteed');
      assert.equal(guaranteedPodAfter?.status?.phase, 'Running');
      assert.equal(guaranteedPodAfter?.status?.containerStatuses?.[0]?.restartCount, 0);
      // Unset the threshold: MemoryPressure goes back to False after the transition period.
      await patchEviction({ hard: null, pressureTransitionPeriodSeconds: 20 });
      const restoredAt = Date.now();
      await eventually('MemoryPressure=False again', async () => (conditionStatus(await getNode(), 'MemoryPressure') === 'False' ? true : undefined), 120_000);
      const clearedAt = Date.now();
      // The Node's events, as the kubelet's: pressure came and went once each.
      const eventsAfter = await eventually('the NodeHasSufficientMemory event', async () => {
        const counts = await nodeEventCounts();
        return (counts.get('NodeHasSufficientMemory') ?? 0) > (eventsBefore.get('NodeHasSufficientMemory') ?? 0) ? counts : undefined;
      });
      const added = (reason: string): number => (eventsAfter.get(reason) ?? 0) - (eventsBefore.get(reason) ?? 0);
      assert.deepEqual([added('NodeHasInsufficientMemory'), added('NodeHasSufficientMemory')], [1, 1], 'one NodeHasInsufficientMemory and one NodeHasSufficientMemory event');
      assert.match(await kubectl(['describe', 'node', NODE_NAME]), /Normal\s+NodeHasInsufficientMemory\s+.*Node \S+ status is now: NodeHasInsufficientMemory/);
      console.log(
        `[eviction/memory] threshold ${threshold} (available ${ki(available)} at start, margin ${marginBytes / MiB}Mi, pod holds ${hungryMiB}Mi); ` +
          `pod Running ${runningAt - startedAt} ms after create; MemoryPressure seen ${pressureAt - runningAt} ms after Running; ` +
          `pod Failed/Evicted ${evictedAt - runningAt} ms after Running; MemoryPressure False ${clearedAt - restoredAt} ms after the threshold was unset (transition period 20 s); ` +
          `taint node.kubernetes.io/memory-pressure ${watch.seen.has('taint:node.kubernetes.io/memory-pressure') ? `seen ${(watch.seen.get('taint:node.kubernetes.io/memory-pressure') ?? 0) - runningAt} ms after Running` : 'not seen'}; ` +
          `evicted in order: [${(await evictedInOrder(namespace)).join(', ')}]; refused: [${namespace}/late]`,
      );
      console.log(`[eviction/memory] message: ${JSON.stringify(hungry.status?.message)}`);
      // Not a candidate for the disk test's eviction.
      await kubectl(['delete', 'pod', 'guaranteed', '-n', namespace, '--grace-period=1', '--wait=true']);
    } finally {
      await watch.stop();
      await patchEviction(null);
    }
  });

  it('disk: evicts the pod filling an emptyDir under a low nodefs.available threshold and removes its emptyDir', async () => {
    const marginBytes = 300 * MiB;
    const watch = watchNode();
    try {
      // The memory test's pressure must be over (its transition period) before this one starts.
      await patchEviction({ pressureTransitionPeriodSeconds: 5 });
      await eventually('no pressure on the Node', async () => ((await getNode()).status?.conditions ?? []).every((c) => c.type === 'Ready' || c.status === 'False') ? true : undefined, 120_000);
      const available = await nodefsAvailableBytes();
      const threshold = ki(available - marginBytes);
      await patchEviction({ hard: { 'nodefs.available': threshold }, pressureTransitionPeriodSeconds: 5 });
      await waitSettingsApplied();
      const fillMiB = (2 * marginBytes) / MiB;
      const name = uniqueName('filler');
      const pod = busyboxPod({ name, namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: `dd if=/dev/zero of=/scratch/fill bs=1M count=${fillMiB} && sync && sleep 3600` }) as { spec: { containers: Record<string, unknown>[]; volumes?: object[] } };
      pod.spec.volumes = [{ name: 'scratch', emptyDir: {} }];
      pod.spec.containers[0] = { ...pod.spec.containers[0], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] };
      const startedAt = Date.now();
      await apply(pod);
      const running = await waitForPhase(namespace, name, 'Running');
      const runningAt = Date.now();
      const uid = running.metadata?.uid ?? '';
      const emptyDir = path.join(AGENT_ROOT, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
      await eventually('DiskPressure=True on the Node', async () => (conditionStatus(await getNode(), 'DiskPressure') === 'True' ? true : undefined), 120_000);
      const pressureAt = Date.now();
      const evicted = await waitEvicted(namespace, name);
      const evictedAt = Date.now();
      // Lift the threshold at once: the shared disk moves under other work, nothing else should go.
      await patchEviction({ hard: null, pressureTransitionPeriodSeconds: 5 });
      assert.match(evicted.status?.message ?? '', /^The node was low on resource: ephemeral-storage\. Threshold quantity: \d+(Ki|Mi|Gi)?, available: \d+(Ki|Mi|Gi)?\. /);
      assert.equal(disruptionTarget(evicted)?.reason, 'TerminationByKubelet');
      await eventually('the evicted pod\'s emptyDir removed', () => Promise.resolve(existsSync(emptyDir) ? undefined : true), 60_000);
      const removedAt = Date.now();
      const order = (await evictedInOrder(namespace)).filter((n) => n !== `${namespace}/hungry`);
      assert.equal(order[0], `${namespace}/${name}`, 'the filler is the first pod evicted for disk');
      await eventually("the evicted pod's dead containers removed", async () => ((await runtimeContainers(uid)).length === 0 ? true : undefined), 30_000);
      await eventually('DiskPressure=False again', async () => (conditionStatus(await getNode(), 'DiskPressure') === 'False' ? true : undefined), 120_000);
      console.log(
        `[eviction/disk] threshold ${threshold} (nodefs available ${ki(available)} at start, margin ${marginBytes / MiB}Mi, pod writes ${fillMiB}Mi); ` +
          `pod Running ${runningAt - startedAt} ms after create; DiskPressure seen ${pressureAt - runningAt} ms after Running; ` +
          `pod Failed/Evicted ${evictedAt - runningAt} ms after Running; emptyDir gone ${removedAt - evictedAt} ms after that; ` +
          `taint node.kubernetes.io/disk-pressure ${watch.seen.has('taint:node.kubernetes.io/disk-pressure') ? 'seen' : 'not seen'}; evicted in order: [${(await evictedInOrder(namespace)).join(', ')}]`,
      );
      console.log(`[eviction/disk] message: ${JSON.stringify(evicted.status?.message)}`);
    } finally {
      await watch.stop();
      await patchEviction(null);
    }
  });
});
