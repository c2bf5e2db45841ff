/**
 * Component tests of the pod lifecycle kernel as the agent assembles it (`assemblePodSync`): every
 * per-pod manager hears a pod's whole life and forgets it once it is gone, a finished pod never
 * starts again, and a cancelled run stops at its next runtime call without writing anything.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { isCriCancelled } from '../../cri/errors.js';
import type { CallOptions, ContainerConfig, PodSandboxConfig } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';

function recordLifecycle(h: ReconcilerHarness): string[] {
  const calls: string[] = [];
  const observer: PodLifecycleObserver = {
    podAdmitted: () => calls.push('admitted'),
    sandboxStarted: () => calls.push('sandboxStarted'),
    containerStarted: (_k, c) => calls.push(`containerStarted:${c.name}`),
    podTerminating: (_k, grace) => calls.push(`terminating:${grace}`),
    podTerminated: () => calls.push('terminated'),
    podForgotten: () => calls.push('forgotten'),
  };
  h.sync().lifecycle.register(observer);
  return calls;
}

describe('the pod lifecycle kernel in the assembled reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  /** Runs a pod (grace 20 s, an exec preStop hook on `app`), then removes it from the pod sources. */
  async function syncThenRemoveHookedPod(): Promise<void> {
    h.store.set(UID, basePod((p) => {
      p.spec!.terminationGracePeriodSeconds = 20;
      p.spec!.containers[0]!.lifecycle = { preStop: { exec: { command: ['sh', '-c', 'echo bye > /data/prestop'] } } };
    }));
    await h.reconciler().reconcile(ref);
    h.store.delete(UID);
  }

  it('takes a pod through admitted → started → terminating → terminated → forgotten, and every manager drops its state', async () => {
    const calls = recordLifecycle(h);
    h.store.set(UID, basePod((p) => (p.spec!.terminationGracePeriodSeconds = 7)));
    await h.reconciler().reconcile(ref);
    // A crash and a restart leave restart-backoff state; a missing image leaves a start failure.
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 1);
    await h.reconciler().reconcile(ref);
    const sync = h.sync();
    assert.ok(sync.restartBackoff.size > 0, 'the restart left a backoff entry');
    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    assert.equal(h.store.get(UID), undefined, 'the status writer deleted the pod object');
    assert.equal(sync.lifecycle.get(UID)?.phase, 'terminated', 'kept until the pod is gone from every source');
    // The run queued by its deletion's echo does nothing; housekeeping forgets the pod.
    await h.reconciler().reconcile(ref);
    assert.equal(sync.lifecycle.get(UID)?.phase, 'terminated');
    assert.equal(await h.reconciler().forgetRemovedPods(() => false), 1);
    assert.deepEqual(calls, ['admitted', 'sandboxStarted', 'containerStarted:app', 'containerStarted:sidecar', 'containerStarted:app', 'terminating:7', 'terminated', 'forgotten']);
    assert.equal(sync.restartBackoff.size, 0);
    assert.equal(sync.startFailures.size(), 0);
    assert.equal(sync.lifecycle.size(), 0);
    assert.equal(h.status.forgotten, 1);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('forgets a deleted pod it removed itself in housekeeping, without a reconcile, and only once nothing may still run it', async () => {
    const calls = recordLifecycle(h);
    const sync = h.sync();
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const inFlight = new Set<string>();
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 0, 'a running pod is not removed');
    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    // The status writer deletes the pod object at the end of this run; hold it in the store, as an
    // informer that has not delivered the deletion yet.
    const deleted = h.store.get(UID)!;
    await h.reconciler().reconcile(ref);
    h.store.set(UID, deleted);
    assert.ok(sync.lifecycle.get(UID)?.removedAt !== undefined, 'the run removed the pod from the runtime');
    assert.ok(sync.lifecycle.get(UID)?.objectDeletedAt !== undefined, 'and then deleted its object');
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 0, 'still in a pod source');
    h.store.delete(UID);
    h.synced.value = false;
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 0, 'absence not trusted yet');
    h.synced.value = true;
    inFlight.add(UID);
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 0, 'left to the run in flight');
    inFlight.delete(UID);
    // Whatever is left in the pod's directory goes with it.
    await mkdir(path.join(h.root, 'pods', UID, 'leftover'), { recursive: true });
    const runtimeCallsBefore = h.runtime.calls.length;
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 1);
    assert.equal(h.runtime.calls.length, runtimeCallsBefore, 'no runtime call: this process removed everything');
    assert.deepEqual(calls.slice(-2), ['terminated', 'forgotten']);
    assert.equal(sync.lifecycle.size(), 0);
    assert.equal(h.status.forgotten, 1);
    assert.equal(existsSync(path.join(h.root, 'pods', UID)), false, 'the pod directory is gone');
    assert.equal(await h.reconciler().forgetRemovedPods((uid) => inFlight.has(uid)), 0, 'forgotten once');
  });

  it('leaves no per-pod state in any holder it registered once a pod that filled them all is forgotten', async () => {
    // One pod that puts something into every holder assemblePodSync builds: admitted, volumes
    // prepared and refreshed (a downwardAPI volume follows its source), probe workers with a
    // readiness result and a liveness failure, a crash (restart backoff), a failed pull (pull
    // backoff, start failure), an eviction decision.
    let live = true;
    h.runtime.execHandler = (_id, cmd) => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: cmd[0] === 'live' && !live ? 1 : 0 });
    h.store.set(UID, basePod((p) => {
      p.spec!.volumes = [{ name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } }];
      p.spec!.containers[0]!.readinessProbe = { exec: { command: ['ready'] }, periodSeconds: 1 };
      p.spec!.containers[0]!.livenessProbe = { exec: { command: ['live'] }, periodSeconds: 1, failureThreshold: 1 };
    }));
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref); // nothing to start: the running pod's volumes are refreshed
    await h.clock.advance(2000);
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 1);
    await h.reconciler().reconcile(ref);
    const withAbsentSidecar = structuredClone(h.store.get(UID)!);
    withAbsentSidecar.spec!.containers[1]!.image = 'docker.io/library/absent:1';
    h.store.set(UID, withAbsentSidecar);
    h.runtime.injectError('pullImage', new Error('connection refused'));
    await h.reconciler().reconcile(ref).catch(() => undefined);
    live = false;
    await h.clock.advance(1500);
    const sync = h.sync();
    // The eviction manager's decision about this pod (the eviction holder).
    sync.evictions.record(ref, { reason: 'Evicted', message: 'The node was low on resource: memory.', gracePeriodSeconds: 0 });
    const filled = sync.perPodState();
    const empty = Object.entries(filled).filter(([, n]) => n === 0).map(([holder]) => holder);
    assert.deepEqual(empty, [], `holders left empty by the set-up (it must fill them all): ${JSON.stringify(filled)}`);

    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    assert.equal(h.store.get(UID), undefined, 'the status writer deleted the pod object');
    assert.equal(await h.reconciler().forgetRemovedPods(() => false), 1);
    assert.equal(sync.lifecycle.get(UID), undefined, 'forgotten');
    const left = Object.entries(sync.perPodState()).filter(([, n]) => n !== 0);
    assert.deepEqual(left, [], `per-pod state left after the pod was forgotten (before: ${JSON.stringify(filled)})`);
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('forgets the start failures of a pod that is gone', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.containers[0]!.image = 'docker.io/library/absent:1')));
    h.runtime.injectError('pullImage', new Error('connection refused'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.equal(h.sync().startFailures.size(), 1);
    h.store.delete(UID);
    await h.reconciler().reconcile(ref);
    assert.equal(h.sync().startFailures.size(), 0);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
  });

  it('never starts a pod again once it started terminating, even while the API still shows it running', async () => {
    h.store.set(UID, basePod((p) => {
      p.spec!.activeDeadlineSeconds = 1;
      p.status = { phase: 'Running', startTime: new Date(h.clock.now() - 5000) };
    }));
    await h.reconciler().reconcile(ref);
    const sandboxesBefore = h.runtime.callsTo('runPodSandbox').length;
    // The API has not caught up (the terminal status write was lost) and the deadline is gone.
    h.store.set(UID, basePod((p) => (p.status = { phase: 'Running', startTime: new Date(h.clock.now() - 5000) })));
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, sandboxesBefore, 'no new sandbox');
    assert.equal((await h.runtime.listContainers()).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0);
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'terminated');
  });

  it('stops a pod the eviction manager chose through the one kill path: its grace, Failed/Evicted with DisruptionTarget, volumes gone, never restarted', async () => {
    const calls = recordLifecycle(h);
    h.store.set(UID, basePod((p) => (p.spec!.terminationGracePeriodSeconds = 30)));
    await h.reconciler().reconcile(ref);
    const podDir = path.join(h.root, 'pods', UID);
    assert.ok(existsSync(podDir), 'the running pod has its directory');
    const message = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. ';
    assert.equal(h.sync().evictions.record(ref, { reason: 'Evicted', message, gracePeriodSeconds: 0 }), true);
    assert.equal(h.sync().evictions.record(ref, { reason: 'Evicted', message: 'again', gracePeriodSeconds: 0 }), false, 'the first decision stands');
    const sandboxes = h.runtime.callsTo('runPodSandbox').length;
    await h.reconciler().reconcile(ref);
    assert.equal((await h.runtime.listContainers()).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0);
    const status = h.status.statuses.at(-1);
    assert.deepEqual({ phase: status?.phase, reason: status?.reason, message: status?.message }, { phase: 'Failed', reason: 'Evicted', message });
    const target = status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual({ status: target?.status, reason: target?.reason, message: target?.message }, { status: 'True', reason: 'TerminationByKubelet', message });
    assert.equal(existsSync(path.join(podDir, 'volumes')), false, "the evicted pod's volumes are torn down at once");
    assert.ok(existsSync(podDir), 'its directory (termination messages) stays while its object does');
    // Reconciled again (a resync): nothing starts.
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, sandboxes);
    assert.deepEqual(calls.slice(-2), ['terminating:1', 'terminated'], 'an eviction with grace 0 gets the kubelet’s minimum of 1 s');
  });

  it("removes an evicted pod's dead containers and their logs once the API shows the eviction, keeping their terminated statuses (the kubelet's HandlePodReconcile)", async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.sync().evictions.record(ref, { reason: 'Evicted', message: 'The node was low on resource: memory. ', gracePeriodSeconds: 0 });
    await h.reconciler().reconcile(ref);
    const dead = await h.runtime.listContainers();
    assert.equal(dead.length, 2, 'the run that evicts keeps the containers: the API does not show the eviction yet');
    const logPaths = await Promise.all(dead.map(async (c) => (await h.runtime.containerStatus(c.id)).logPath));
    for (const file of logPaths) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, 'log line\n');
    }
    const evicted = h.status.statuses.at(-1)!;
    // The echo of the Evicted status reaches the pod source.
    h.store.set(UID, { ...h.store.get(UID)!, status: evicted });
    const statusesBefore = h.status.statuses.length;
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), [], 'every dead container removed');
    assert.equal((await h.runtime.listPodSandbox()).length, 1, 'the sandbox is left to GC and to the deletion');
    assert.deepEqual(logPaths.filter((f) => existsSync(f)), [], 'their log files removed');
    await h.reconciler().reconcile(ref);
    const after = h.status.statuses.slice(statusesBefore).at(-1) ?? evicted;
    assert.deepEqual(after.containerStatuses?.map((c) => [c.name, c.state?.terminated?.exitCode]), evicted.containerStatuses?.map((c) => [c.name, c.state?.terminated?.exitCode]), 'the terminated statuses stay as the API shows them');
    assert.ok(after.containerStatuses?.every((c) => c.state?.terminated !== undefined));
  });

  it('stops a cancelled run at its next runtime call: no event blames the container, no status is written', async () => {
    const controller = new AbortController();
    const runtime = h.runtime;
    const createContainer = runtime.createContainer.bind(runtime);
    // The queue aborts the run (lost lock) while the first container is being created.
    runtime.createContainer = async (sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, options?: CallOptions) => {
      const id = await createContainer(sandboxId, config, sandboxConfig, options);
      controller.abort(new Error('lost the job lock'));
      return id;
    };
    h.store.set(UID, basePod());
    const statusesBefore = h.status.statuses.length;
    await assert.rejects(h.reconciler().reconcile(ref, { signal: controller.signal }), (e: unknown) => isCriCancelled(e));
    assert.equal(h.runtime.callsTo('startContainer').length, 0, 'nothing was sent after the abort');
    assert.equal(h.runtime.callsTo('createContainer').length, 1);
    assert.equal(h.status.statuses.length, statusesBefore, 'no status written by the cancelled run');
    assert.deepEqual(h.events.reasons().filter((r) => r === 'Failed'), []);
    // The next run (a new owner of the UID) picks up from what the runtime has.
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Running');
    const containers = await h.runtime.listContainers();
    assert.equal(containers.filter((c) => c.state === 'CONTAINER_RUNNING').length, 2);
    assert.equal(containers.length, 2, 'the created-but-never-started container was removed');
  });

  it('runs the preStop hook of a pod force-deleted from the API, as the kubelet: restored from its container, before StopContainer, with the recorded grace and Killing events', async () => {
    // `kubectl delete --grace-period=0 --force`: the object is gone at once, never seen terminating.
    await syncThenRemoveHookedPod();
    await h.reconciler().reconcile(ref);
    const calls = h.runtime.calls.filter((c) => c.method === 'execSync' || c.method === 'stopContainer');
    const exec = calls.findIndex((c) => c.method === 'execSync');
    assert.ok(exec >= 0, 'the preStop hook ran');
    // No ExecSync timeout, as the kubelet runs hooks: the agent's wait is what the grace period bounds.
    assert.deepEqual(calls[exec]?.args.slice(1, 3), [['sh', '-c', 'echo bye > /data/prestop'], 0], 'the command, with no ExecSync timeout');
    const appId = String(calls[exec]?.args[0]);
    const appStop = calls.findIndex((c) => c.method === 'stopContainer' && c.args[0] === appId);
    assert.ok(appStop > exec, 'StopContainer only after the hook');
    assert.equal(calls[appStop]?.args[1], 20, 'the full grace period (the hook took no time)');
    assert.equal(calls.filter((c) => c.method === 'execSync').length, 1, 'no hook for the container without one');
    assert.deepEqual(h.events.events.filter((e) => e.reason === 'Killing').map((e) => e.message).sort(), ['Stopping container app', 'Stopping container sidecar']);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.equal(h.sync().lifecycle.size(), 0, 'forgotten');
  });

  it('stops a force-deleted pod (its final object carried grace 0) with the kubelet’s minimum of 1 s, preStop included, even when the reconcile only sees it gone', async () => {
    await syncThenRemoveHookedPod();
    h.finalDeletionGraces.set(UID, 0);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('execSync').length, 1, 'the preStop hook ran (its wait bounded by the 1 s, not the 20 s recorded on the container)');
    assert.deepEqual(h.runtime.callsTo('stopContainer').map((c) => c.args[1]).sort(), [2, 2], 'every container stopped with the kubelet’s minimal window of 2 s');
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('stops a pod deleted while the agent was down (never synced by this agent) with the kubelet’s 1 s override for orphans', async () => {
    h.store.set(UID, basePod((p) => {
      p.spec!.terminationGracePeriodSeconds = 20;
    }));
    await h.reconciler().reconcile(ref);
    h.restartAgent();
    h.store.delete(UID);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(h.runtime.callsTo('stopContainer').map((c) => c.args[1]).sort(), [2, 2], 'the 1 s override, within the kubelet’s minimal window of 2 s');
    assert.equal(h.runtime.calls.filter((c) => c.method === 'execSync').length, 0);
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('never tears down a running pod that its pod source lacks while the origin still has it (regression: running pods replaced after an agent restart on a lagging list)', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const before = (await h.runtime.listContainers()).map((c) => c.id).sort();
    // The restarted agent's cache lacks the pod; the API server still has it.
    h.store.delete(UID);
    h.stillInOrigin.add(UID);
    h.restartAgent();
    const outcome = await h.reconciler().reconcile(ref);
    assert.ok((outcome.requeueAfterMs ?? 0) > 0, 'looked at again later');
    assert.equal(h.runtime.callsTo('stopContainer').length, 0, 'nothing stopped');
    assert.deepEqual((await h.runtime.listContainers()).map((c) => c.id).sort(), before);
    assert.equal((await h.runtime.listContainers()).filter((c) => c.state === 'CONTAINER_RUNNING').length, 2);
    // Once the origin confirms it is gone, it is torn down.
    h.stillInOrigin.delete(UID);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
  });
});
