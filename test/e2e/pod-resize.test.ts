/**
 * End to end: in-place pod resize through the `resize` subresource (`kubectl patch --subresource
 * resize`), as the kubelet v1.36 does it. One pod, two containers:
 * - `c` (resizePolicy default NotRequired): CPU and memory grow in place; the same runtime
 *   container keeps running (restartCount 0), its cgroup files seen from inside it, `crictl
 *   inspect`'s resources and the pod status (`allocatedResources`, `resources`) all show the new
 *   values; PodResizeInProgress appears (watched) and is cleared; ResizeStarted/ResizeCompleted.
 * - `m` (memory: RestartContainer): its memory resize restarts it (restartCount 1, a new runtime
 *   container) with the new limit.
 * Then a resize larger than the node (64 CPUs): refused by the API server (v1.36 checks a resize
 * against the node's allocatable), so it never reaches the node. And a resize that fits the node
 * but not beside another pod: PodResizePending/Deferred with the fit handler's message and the
 * container untouched, then allocated and applied once that pod is deleted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimeContainers } from './helpers.js';

const MiB = 2 ** 20;

/** The pod cgroup's CPU quota and memory limit, read on the host (the pod is Burstable). */
async function podCgroupOf(uid: string): Promise<{ cpuQuota: number; memoryLimit: number }> {
  const dir = `kubepods/burstable/pod${uid}`;
  const read = async (file: string): Promise<number> => Number((await readFile(`/sys/fs/cgroup/${file}`, 'utf8')).trim());
  return { cpuQuota: await read(`cpu/${dir}/cpu.cfs_quota_us`), memoryLimit: await read(`memory/${dir}/memory.limit_in_bytes`) };
}

function resources(cpuRequest: string, cpuLimit: string, memRequest: string, memLimit: string): object {
  return { requests: { cpu: cpuRequest, memory: memRequest }, limits: { cpu: cpuLimit, memory: memLimit } };
}

function pod(namespace: string): object {
  const sleeper = { image: 'busybox:1.35', command: ['sleep', '3600'] };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'resized', namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'c', ...sleeper, resources: resources('100m', '200m', '64Mi', '128Mi') },
        { name: 'm', ...sleeper, resources: resources('50m', '100m', '32Mi', '64Mi'), resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] },
      ],
    },
  };
}

async function resize(namespace: string, containers: object[]): Promise<void> {
  await kubectl(['patch', 'pod', '-n', namespace, 'resized', '--subresource', 'resize', '--type', 'strategic', '-p', JSON.stringify({ spec: { containers } })]);
}

function statusOf(p: V1Pod, name: string): V1ContainerStatus {
  const s = p.status?.containerStatuses?.find((c) => c.name === name);
  assert.ok(s !== undefined, `status of ${name}`);
  return s;
}

function condition(p: V1Pod, type: string): V1PodCondition | undefined {
  return p.status?.conditions?.find((c) => c.type === type);
}

/** The container's cgroup v1 files, read inside it. */
async function cgroupOf(id: string): Promise<{ memoryLimit: number; cpuQuota: number; cpuShares: number }> {
  const out = await crictl(['exec', id, 'cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us', '/sys/fs/cgroup/cpu/cpu.shares']);
  const [memoryLimit, cpuQuota, cpuShares] = out.trim().split('\n').map(Number);
  return { memoryLimit: memoryLimit ?? NaN, cpuQuota: cpuQuota ?? NaN, cpuShares: cpuShares ?? NaN };
}

/** `crictl inspect`'s status.resources.linux of a container. */
async function inspectedResources(id: string): Promise<{ cpuQuota: string; cpuShares: string; memoryLimitInBytes: string }> {
  const inspected = JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { status: { resources?: { linux?: { cpuQuota: string; cpuShares: string; memoryLimitInBytes: string } } } };
  const linux = inspected.status.resources?.linux;
  assert.ok(linux !== undefined, 'the runtime reports the container resources');
  return { cpuQuota: linux.cpuQuota, cpuShares: linux.cpuShares, memoryLimitInBytes: linux.memoryLimitInBytes };
}

/** Every `generation|conditions` line the watch printed while it ran. */
function watchConditions(namespace: string): { lines: string[]; stop: () => void } {
  const lines: string[] = [];
  const child = spawn('kubectl', ['get', 'pod', '-n', namespace, 'resized', '-w', '-o', 'jsonpath={.metadata.generation}{"|"}{.status.conditions}{"\\n"}'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
  });
  return { lines, stop: () => child.kill('SIGTERM') };
}

/** The stderr of a kubectl command that must fail. */
async function kubectlOutcomeOf(run: () => Promise<void>): Promise<string> {
  try {
    await run();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  assert.fail('the command succeeded');
}

async function runningIds(uid: string): Promise<Map<string, string>> {
  const containers = await runtimeContainers(uid);
  return new Map(containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => [c.name, c.id]));
}

describe('in-place pod resize', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-resize');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('resizes CPU and memory in place (NotRequired), restarts a RestartContainer container, and leaves a resize larger than the node pending', async (t) => {
    await apply(pod(namespace));
    const running = await eventually('both containers to run and report resources', async () => {
      const p = await getPod(namespace, 'resized');
      const all = p?.status?.containerStatuses ?? [];
      return all.length === 2 && all.every((s) => s.state?.running !== undefined && s.resources !== undefined) ? p : undefined;
    });
    const uid = running.metadata?.uid ?? '';
    const before = await runningIds(uid);
    const cId = before.get('c') ?? '';
    const mId = before.get('m') ?? '';
    assert.deepEqual(await cgroupOf(cId), { memoryLimit: 128 * MiB, cpuQuota: 20000, cpuShares: 102 }, 'c as created');
    assert.deepEqual(await podCgroupOf(uid), { cpuQuota: 30000, memoryLimit: 192 * MiB }, 'the pod cgroup: the sum of the limits');

    // 1. Grow c's CPU and memory (in place) and m's memory (restart).
    const watch = watchConditions(namespace);
    const started = Date.now();
    try {
      await resize(namespace, [
        { name: 'c', resources: resources('150m', '300m', '96Mi', '192Mi') },
        { name: 'm', resources: resources('50m', '100m', '48Mi', '96Mi') },
      ]);
      const done = await eventually('the resize to complete', async () => {
        const p = await getPod(namespace, 'resized');
        if (p === undefined || condition(p, 'PodResizeInProgress') !== undefined || condition(p, 'PodResizePending') !== undefined) return undefined;
        const c = statusOf(p, 'c');
        const m = statusOf(p, 'm');
        return c.resources?.limits?.memory === '192Mi' && m.restartCount === 1 && m.state?.running !== undefined ? p : undefined;
      });
      t.diagnostic(`resize allocated, actuated and reported in ${Date.now() - started} ms`);
      const generation = done.metadata?.generation ?? 0;
      assert.equal(done.status?.observedGeneration, generation, 'status.observedGeneration follows the resize');
      const c = statusOf(done, 'c');
      assert.equal(c.restartCount, 0, 'c resized in place');
      assert.equal(c.containerID, `containerd://${cId}`, 'c is the same runtime container');
      assert.deepEqual(c.allocatedResources, { cpu: '150m', memory: '96Mi' });
      assert.deepEqual(c.resources, resources('150m', '300m', '96Mi', '192Mi'));
      const m = statusOf(done, 'm');
      assert.notEqual(m.containerID, `containerd://${mId}`, 'm is a new runtime container');
      assert.deepEqual(m.resources?.limits, { cpu: '100m', memory: '96Mi' });

      const after = await runningIds(uid);
      assert.equal(after.get('c'), cId, 'the runtime still runs the same c');
      assert.deepEqual(await cgroupOf(cId), { memoryLimit: 192 * MiB, cpuQuota: 30000, cpuShares: 153 }, 'c cgroup files after the resize');
      assert.deepEqual(await inspectedResources(cId), { cpuQuota: '30000', cpuShares: '153', memoryLimitInBytes: String(192 * MiB) }, 'crictl inspect of c');
      assert.deepEqual(await podCgroupOf(uid), { cpuQuota: 40000, memoryLimit: 288 * MiB }, 'the pod cgroup follows the resize');
      const newM = after.get('m') ?? '';
      assert.equal((await cgroupOf(newM)).memoryLimit, 96 * MiB, 'm restarted with its new memory limit');
      assert.equal((await runtimeContainers(uid)).filter((x) => x.name === 'm').length, 2, 'm: the old instance (exited) and the new one');

      // PodResizeInProgress was in the API while the resize ran, for this generation, then cleared.
      await eventually('the watch to show the cleared conditions', () => Promise.resolve(watch.lines.some((l) => l.startsWith(`${generation}|`) && !l.includes('PodResizeInProgress')) ? true : undefined), 10_000);
      const inProgress = watch.lines.filter((l) => l.includes('"PodResizeInProgress"'));
      assert.ok(inProgress.length > 0, `PodResizeInProgress was written (watch saw: ${watch.lines.length} updates)`);
      const seen = (JSON.parse(inProgress[0]!.split('|')[1]!) as V1PodCondition[]).find((x) => x.type === 'PodResizeInProgress');
      assert.equal(seen?.status, 'True');
      assert.equal(seen?.observedGeneration, generation);
      assert.ok(seen?.lastTransitionTime !== undefined && seen.lastProbeTime !== undefined, 'with its timestamps');
      t.diagnostic(`PodResizeInProgress seen in ${inProgress.length} of ${watch.lines.length} watched updates: ${JSON.stringify(seen)}`);
    } finally {
      watch.stop();
    }
    const reasons = (await podEvents(namespace, 'resized')).map((e) => e.reason);
    assert.ok(reasons.includes('ResizeStarted'), `ResizeStarted event (${reasons.join(',')})`);
    assert.ok(reasons.includes('ResizeCompleted'), `ResizeCompleted event (${reasons.join(',')})`);

    // 2. More CPU than the node has: the API server refuses it (v1.36's resize admission), nothing reaches the node.
    const refused = await kubectlOutcomeOf(() => resize(namespace, [{ name: 'c', resources: resources('64', '64', '96Mi', '192Mi') }]));
    assert.match(refused, /forbidden: node didn't have enough allocatable resources: cpu/);

    // 3. A resize that fits the node but not beside another pod (hog: 1 CPU; the node's system pods
    //    request some 400m of its 2): PodResizePending/Deferred, nothing applied; allocated and applied
    //    once that pod leaves.
    const hog = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hog', namespace }, spec: { nodeName: NODE_NAME, terminationGracePeriodSeconds: 0, containers: [{ name: 'h', image: 'busybox:1.35', command: ['sleep', '3600'], resources: { requests: { cpu: '1' } } }] } };
    await apply(hog);
    await eventually('hog to run', async () => ((await getPod(namespace, 'hog'))?.status?.phase === 'Running' ? true : undefined));
    await resize(namespace, [{ name: 'c', resources: resources('1', '1', '96Mi', '192Mi') }]);
    const pending = await eventually('PodResizePending', async () => {
      const p = await getPod(namespace, 'resized');
      return p !== undefined && condition(p, 'PodResizePending') !== undefined ? p : undefined;
    });
    const cond = condition(pending, 'PodResizePending');
    t.diagnostic(`PodResizePending: ${JSON.stringify(cond)}`);
    assert.equal(cond?.reason, 'Deferred', 'v1.36 reports a resize that does not fit beside the other pods as Deferred');
    assert.match(cond?.message ?? '', /^Node didn't have enough resource: cpu, requested: 1050, used: \d+, capacity: 2000$/);
    assert.equal(cond?.observedGeneration, pending.metadata?.generation);
    assert.ok(cond?.lastTransitionTime !== undefined);
    assert.equal(condition(pending, 'PodResizeInProgress'), undefined);
    assert.deepEqual(statusOf(pending, 'c').allocatedResources, { cpu: '150m', memory: '96Mi' }, 'the allocation did not change');
    assert.equal(statusOf(pending, 'c').containerID, `containerd://${cId}`);
    assert.deepEqual(await cgroupOf(cId), { memoryLimit: 192 * MiB, cpuQuota: 30000, cpuShares: 153 }, 'c untouched by the pending resize');
    assert.ok((await podEvents(namespace, 'resized')).some((e) => e.reason === 'ResizeDeferred' && e.type === 'Warning'), 'ResizeDeferred event');

    const freed = Date.now();
    await kubectl(['delete', 'pod', '-n', namespace, 'hog', '--wait=false']);
    const taken = await eventually('the deferred resize to be taken once hog left', async () => {
      const p = await getPod(namespace, 'resized');
      return p !== undefined && condition(p, 'PodResizePending') === undefined && condition(p, 'PodResizeInProgress') === undefined && statusOf(p, 'c').resources?.limits?.cpu === '1' ? p : undefined;
    });
    const waited = Date.now() - freed;
    t.diagnostic(`deferred resize applied ${waited} ms after hog was deleted`);
    assert.deepEqual(statusOf(taken, 'c').allocatedResources, { cpu: '1', memory: '96Mi' });
    assert.equal(statusOf(taken, 'c').restartCount, 0);
    assert.equal((await cgroupOf(cId)).cpuQuota, 100000, 'c cgroup quota after the deferred resize');
  });
});
