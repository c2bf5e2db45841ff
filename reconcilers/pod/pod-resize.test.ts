/**
 * Component tests of in-place pod resize through the assembled reconciler (fake runtime): the
 * allocation, the CRI updates in the kubelet's order, the RestartContainer restart, the resize
 * conditions and events, a Deferred resize that survives an agent restart without being applied,
 * and a memory decrease that cannot be checked reported as PodResizeInProgress/Error.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import type { LinuxContainerResources } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

function resources(cpu: string, memory: string): { requests: Record<string, string>; limits: Record<string, string> } {
  return { requests: { cpu, memory }, limits: { cpu, memory } };
}

/** app (NotRequired) and sidecar (memory: RestartContainer), both 100m/64Mi, generation 1. */
function resizablePod(): V1Pod {
  return basePod((p) => {
    p.metadata!.generation = 1;
    p.spec!.containers[0]!.resources = resources('100m', '64Mi');
    p.spec!.containers[1]!.resources = resources('100m', '64Mi');
    p.spec!.containers[1]!.resizePolicy = [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }];
  });
}

/** The API's pod with new resources for some containers and the next generation (what a resize patch does). */
function resized(h: ReconcilerHarness, changes: Record<string, ReturnType<typeof resources>>): void {
  const pod = structuredClone(h.store.get(UID)!);
  pod.metadata!.generation = (pod.metadata!.generation ?? 0) + 1;
  for (const c of pod.spec!.containers) if (changes[c.name] !== undefined) c.resources = changes[c.name];
  h.store.set(UID, pod);
}

function conditionOf(h: ReconcilerHarness, type: string): V1PodCondition | undefined {
  return h.status.last()?.conditions?.find((c) => c.type === type);
}

function updates(h: ReconcilerHarness): { id: string; resources: LinuxContainerResources }[] {
  return h.runtime.calls.filter((c) => c.method === 'updateContainerResources').map((c) => ({ id: c.args[0] as string, resources: c.args[1] as LinuxContainerResources }));
}

async function runningId(h: ReconcilerHarness, name: string): Promise<string> {
  const all = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': name }, state: 'CONTAINER_RUNNING' });
  assert.equal(all.length, 1, `one running ${name}`);
  return all[0]!.id;
}

describe('in-place pod resize in the assembled reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
    h.store.set(UID, resizablePod());
    await h.reconciler().reconcile(ref);
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('updates a NotRequired container in place (memory, then CPU), restarts a RestartContainer one, and reports the progress', async () => {
    const appId = await runningId(h, 'app');
    const sidecarId = await runningId(h, 'sidecar');
    resized(h, { app: resources('200m', '128Mi'), sidecar: resources('100m', '96Mi') });
    const outcome = await h.reconciler().reconcile(ref);

    // Two in-place updates of app: memory (CPU as it was), then CPU; nothing for the sidecar.
    assert.deepEqual(
      updates(h).map((u) => [u.id, u.resources.memoryLimitInBytes, u.resources.cpuQuota]),
      [
        [appId, 128n * 2n ** 20n, 10000n],
        [appId, 128n * 2n ** 20n, 20000n],
      ],
    );
    assert.equal(h.runtime.getContainer(appId)?.state, 'CONTAINER_RUNNING', 'app keeps running');
    assert.equal(h.runtime.getContainer(sidecarId)?.state, 'CONTAINER_EXITED', 'the sidecar was stopped');
    const newSidecar = await runningId(h, 'sidecar');
    assert.notEqual(newSidecar, sidecarId);
    assert.equal(h.runtime.getContainer(newSidecar)?.config.linux?.resources?.memoryLimitInBytes, 96n * 2n ** 20n, 'restarted with the allocated memory');
    assert.ok(h.events.events.some((e) => e.reason === 'Killing' && e.message === 'Container sidecar resize requires restart'));
    // Checked before actuating (as the kubelet's SyncPod): in progress for generation 2 in this status.
    assert.deepEqual({ ...conditionOf(h, 'PodResizeInProgress'), lastProbeTime: undefined, lastTransitionTime: undefined }, { type: 'PodResizeInProgress', status: 'True', observedGeneration: 2, lastProbeTime: undefined, lastTransitionTime: undefined });
    assert.equal(outcome.requeueAfterMs, 1000, 'looked at again soon to see the resize complete');
    const started = h.events.events.find((e) => e.reason === 'ResizeStarted');
    assert.match(started?.message ?? '', /^Pod resize started: \{"containers":\[\{"name":"app","resources":\{"limits":\{"cpu":"200m","memory":"128Mi"\}/);

    await h.reconciler().reconcile(ref);
    assert.equal(conditionOf(h, 'PodResizeInProgress'), undefined, 'cleared once every container runs as allocated');
    assert.equal(updates(h).length, 2, 'nothing applied twice');
    assert.ok(h.events.events.some((e) => e.reason === 'ResizeCompleted' && e.message.includes('"generation":2')));
    const app = h.status.last()?.containerStatuses?.find((s) => s.name === 'app');
    assert.deepEqual(app?.allocatedResources, { cpu: '200m', memory: '128Mi' });
    assert.deepEqual(app?.resources, { limits: { cpu: '200m', memory: '128Mi' }, requests: { cpu: '200m', memory: '128Mi' } }, 'the runtime reports what it applies');
    assert.equal(app?.restartCount, 0);
    assert.equal(h.status.last()?.containerStatuses?.find((s) => s.name === 'sidecar')?.restartCount, 1);
  });

  it('defers a resize that does not fit, keeps it deferred and unapplied across an agent restart, and takes it once it is reverted', async () => {
    const appId = await runningId(h, 'app');
    // The harness node has 2000m; the sidecar holds 100m.
    resized(h, { app: resources('1950m', '64Mi') });
    await h.reconciler().reconcile(ref);
    const pending = conditionOf(h, 'PodResizePending');
    assert.equal(pending?.reason, 'Deferred');
    assert.equal(pending?.message, "Node didn't have enough resource: cpu, requested: 2050, used: 0, capacity: 2000");
    assert.equal(pending?.observedGeneration, 2);
    assert.equal(h.events.events.filter((e) => e.reason === 'ResizeDeferred').length, 1);
    assert.deepEqual(updates(h), []);

    h.restartAgent();
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(updates(h), [], 'a restarted agent does not apply the deferred resize');
    assert.equal(await runningId(h, 'app'), appId, 'nor restart anything for it');
    assert.equal(conditionOf(h, 'PodResizePending')?.reason, 'Deferred', 'and still reports it');
    assert.equal(conditionOf(h, 'PodResizePending')?.lastTransitionTime, pending?.lastTransitionTime, 'the same condition, not a new one');
    assert.equal(h.events.events.filter((e) => e.reason === 'ResizeDeferred').length, 1, 'announced once');
    assert.deepEqual(h.status.last()?.containerStatuses?.find((s) => s.name === 'app')?.allocatedResources, { cpu: '100m', memory: '64Mi' });

    resized(h, { app: resources('100m', '64Mi') });
    await h.reconciler().reconcile(ref);
    assert.equal(conditionOf(h, 'PodResizePending'), undefined, 'a reverted resize is no longer pending');
    assert.deepEqual(updates(h), []);
  });

  for (const how of ['deleted', 'gone from the API at once'] as const) it(`retries a Deferred resize when another pod leaves the node (${how})`, async () => {
    const other = basePod((p) => {
      p.metadata = { name: 'other', namespace: 'default', uid: 'uid-2' };
      p.spec!.containers = [{ name: 'big', image: 'busybox:1.35', resources: resources('1000m', '64Mi') }];
    });
    h.store.set('uid-2', other);
    const otherRef = { uid: 'uid-2', namespace: 'default', name: 'other' };
    await h.reconciler().reconcile(otherRef);
    resized(h, { app: resources('1000m', '64Mi') });
    await h.reconciler().reconcile(ref);
    assert.equal(conditionOf(h, 'PodResizePending')?.reason, 'Deferred');
    if (how === 'deleted') h.store.set('uid-2', { ...h.store.get('uid-2')!, metadata: { ...h.store.get('uid-2')!.metadata, deletionTimestamp: new Date() } });
    else h.store.delete('uid-2');
    await h.reconciler().reconcile(otherRef);
    assert.ok(h.syncRequests.some((r) => r.key.uid === UID), 'the deferred pod was asked to sync');
    await h.reconciler().reconcile(ref);
    assert.equal(conditionOf(h, 'PodResizePending'), undefined);
    assert.equal(updates(h).length, 1, 'the CPU update was applied');
  });

  it('reports a memory decrease it cannot check against usage as PodResizeInProgress/Error, and applies nothing', async () => {
    resized(h, { app: resources('100m', '32Mi') });
    await h.reconciler().reconcile(ref);
    const inProgress = conditionOf(h, 'PodResizeInProgress');
    assert.equal(inProgress?.reason, 'Error');
    assert.equal(inProgress?.message, 'cannot decrease memory limits: [missing container "app" memory usage]');
    assert.ok(h.events.events.some((e) => e.reason === 'ResizeError' && e.type === 'Warning'));
    assert.deepEqual(updates(h), []);
    // Allocated 32Mi, but the runtime still applies 64Mi: the status says both.
    const app = h.status.last()?.containerStatuses?.find((s) => s.name === 'app');
    assert.deepEqual(app?.allocatedResources, { cpu: '100m', memory: '32Mi' });
    assert.deepEqual(app?.resources?.limits, { cpu: '100m', memory: '64Mi' });
    assert.equal(app?.resources?.requests?.memory, '64Mi', 'the memory request last actuated (at creation)');
  });
});
