/**
 * Component tests of one reconcile against the recording fake runtime: the plan is executed, the
 * status reported, and restarts of the reconciler change nothing that runs.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriUnavailableError } from '../../cri/errors.js';
import { isContainerStartError } from '../model/sync-errors.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { snapshotOfListing } from '../../controllers/pleg/pleg.js';
import { RuntimeSightings } from '../model/runtime-sightings.js';

describe('PodReconciler with the fake runtime', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('creates one sandbox, starts the containers in spec order, and reports Running with the sandbox IP', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    const created = h.runtime.callsTo('createContainer').map((c) => (c.args[1] as { metadata: { name: string } }).metadata.name);
    assert.deepEqual(created, ['app', 'sidecar']);
    const status = h.status.last();
    assert.equal(status?.phase, 'Running');
    assert.match(status?.podIP ?? '', /^10\.88\.0\.\d+$/);
    assert.deepEqual(h.events.reasons().filter((r) => r === 'Started'), ['Started', 'Started']);
  });

  it('wakes up for activeDeadlineSeconds from its first run, counted from the start time it wrote, before the API shows one', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.activeDeadlineSeconds = 30)));
    const outcome = await h.reconciler().reconcile(ref);
    const started = new Date(h.status.last()?.startTime ?? 0).getTime();
    assert.ok(started > 0, 'the run wrote a start time');
    assert.equal(outcome.requeueAfterMs, started + 30_000 - h.clock.now());
  });

  it('observes the runtime again only after a run that acted, by the IDs it knows: a sync with nothing to do reports what it read', async () => {
    h.store.set(UID, basePod());
    const lists = (): number => h.runtime.callsTo('listPodSandbox').length + h.runtime.callsTo('listContainers').length;
    const statusReads = (): number => h.runtime.callsTo('podSandboxStatus').length + h.runtime.callsTo('containerStatus').length;
    /** The runtime reads of one reconcile (the test's own listings are not counted). */
    const readsOf = async (): Promise<{ lists: number; statuses: number }> => {
      const [l, st] = [lists(), statusReads()];
      await h.reconciler().reconcile(ref);
      return { lists: lists() - l, statuses: statusReads() - st };
    };
    assert.deepEqual(await readsOf(), { lists: 2, statuses: 1 + 3 }, 'a run that creates lists the runtime once, before it acts; after it, the statuses of what it created, by ID (the sandbox status of its IP, then one sandbox and two containers)');
    const created = (await h.runtime.listContainers()).map((c) => c.id).sort();
    assert.equal(created.length, 2);
    assert.deepEqual(h.status.last()?.containerStatuses?.map((c) => c.containerID?.replace(/^containerd:\/\//, '')).sort(), created, 'both reported');
    assert.equal(h.status.last()?.phase, 'Running');
    const statuses = h.status.statuses.length;
    assert.deepEqual(await readsOf(), { lists: 2, statuses: 3 }, 'a run with nothing to do reads it once');
    assert.equal(h.status.statuses.length, statuses + 1, 'and still reports the status');
    assert.equal(h.status.last()?.phase, 'Running');
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    assert.ok(app !== undefined);
    h.runtime.setContainerExited(app.id, 1);
    assert.deepEqual(await readsOf(), { lists: 2, statuses: 3 + 4 }, 'a restart is an action: the statuses are read again after it, by ID (one sandbox, three containers)');
    const appStatus = h.status.last()?.containerStatuses?.find((c) => c.name === 'app');
    assert.equal(appStatus?.restartCount, 1);
    assert.ok(appStatus?.state?.running, 'the new instance, which no list showed, is reported running');
    assert.equal(appStatus?.lastState?.terminated?.exitCode, 1, 'and the exited one as its last state');
  });

  it('lists the runtime again after a run in which a container could not start', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const lists = (): number => h.runtime.callsTo('listContainers').length;
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 1);
    h.runtime.injectError('startContainer', new Error('runc: exec failed'));
    const before = lists();
    await h.reconciler().reconcile(ref).catch(() => undefined);
    assert.equal(lists(), before + 2, 'before the run, and after it: the created container the run could not start is found');
    const states = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } })).map((c) => c.state).sort();
    assert.deepEqual(states, ['CONTAINER_CREATED', 'CONTAINER_EXITED']);
  });

  it('does not read the runtime again for a pod it terminated and removed once the pod leaves its source; a restarted agent still does', async () => {
    const reads = (): number => h.runtime.callsTo('listPodSandbox').length + h.runtime.callsTo('listContainers').length;
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    const beforeDelete = reads();
    await h.reconciler().reconcile(ref);
    assert.equal(reads() - beforeDelete, 2, 'the deleting run lists once: after the kill it reads what it killed by ID');
    assert.equal(h.store.get(UID), undefined, 'terminated, removed, and the pod object deleted');
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'terminated');
    assert.ok(h.sync().lifecycle.get(UID)?.removedAt !== undefined, 'the kernel knows this process removed it');
    const before = reads();
    await h.reconciler().reconcile(ref);
    assert.equal(reads(), before, 'a run of the gone pod reads nothing');
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'terminated', 'forgetting is left to housekeeping');
    assert.equal(await h.reconciler().forgetRemovedPods(() => false), 1);
    assert.equal(reads(), before, 'the gone pod is forgotten without a runtime read');
    assert.equal(h.sync().lifecycle.get(UID), undefined, 'forgotten');
    assert.deepEqual([await h.runtime.listPodSandbox(), await h.runtime.listContainers()], [[], []]);

    // A pod whose record this process lacks (the agent restarted after removing it) is read as ever.
    const afterForget = reads();
    await h.reconciler().reconcile(ref);
    assert.equal(reads(), afterForget + 2, 'without the fact, the runtime is listed');
  });

  it('changes nothing when reconciled again, even by a restarted agent', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const callsBefore = h.runtime.calls.filter((c) => c.method === 'runPodSandbox' || c.method === 'createContainer' || c.method === 'stopContainer').length;
    await h.reconciler().reconcile(ref);
    const callsAfter = h.runtime.calls.filter((c) => c.method === 'runPodSandbox' || c.method === 'createContainer' || c.method === 'stopContainer').length;
    assert.equal(callsAfter, callsBefore);
    assert.deepEqual(h.status.last()?.containerStatuses?.map((c) => c.restartCount), [0, 0]);
  });

  it('restarts an exited container with the next restart count', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 2);
    await h.reconciler().reconcile(ref);
    const appStatus = h.status.last()?.containerStatuses?.find((c) => c.name === 'app');
    assert.equal(appStatus?.restartCount, 1);
    assert.ok(appStatus?.state?.running);
    assert.equal(appStatus?.lastState?.terminated?.exitCode, 2);
  });

  it('reports ErrImagePull and rethrows when the image cannot be pulled', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.containers[0]!.image = 'docker.io/library/absent:1')));
    h.runtime.injectError('pullImage', new Error('connection refused'));
    const error = await h.reconciler().reconcile(ref).then(() => undefined, (e: unknown) => e);
    assert.ok(isContainerStartError(error));
    assert.equal(error.reason, 'ErrImagePull');
    assert.equal(h.status.last()?.containerStatuses?.[0]?.state?.waiting?.reason, 'ErrImagePull');
    assert.ok(h.events.events.some((e) => e.reason === 'Failed' && e.message.includes('Failed to pull image')));
  });

  it('keeps the pod ContainerCreating and rethrows when the runtime is unavailable at sandbox creation', async () => {
    h.store.set(UID, basePod());
    h.runtime.injectError('runPodSandbox', new CriUnavailableError({ method: 'RunPodSandbox', code: GrpcStatus.UNAVAILABLE, message: 'connection refused' }));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.equal(h.status.last()?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.ok(h.events.reasons().includes('FailedCreatePodSandBox'));
  });

  it('terminates a deleted pod: stops containers with its grace period, removes the sandbox, deletes the pod object', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.set(UID, basePod((p) => {
      p.metadata!.deletionTimestamp = new Date();
      p.metadata!.deletionGracePeriodSeconds = 7;
      p.status = h.status.last();
    }));
    await h.reconciler().reconcile(ref);
    assert.deepEqual(h.runtime.callsTo('stopContainer').map((c) => c.args[1]), [7, 7]);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.equal(h.status.last()?.phase, 'Failed');
    assert.deepEqual(h.status.deleted, [UID]);
  });

  it('removes everything of a pod the API no longer has', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.delete(UID);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('tears nothing down for a pod missing from a store that has not synced yet (agent restart)', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.delete(UID);
    h.synced.value = false;
    const outcome = await h.reconciler().reconcile(ref);
    assert.ok((outcome.requeueAfterMs ?? 0) > 0);
    assert.equal(h.runtime.callsTo('stopContainer').length, 0);
    assert.equal((await h.runtime.listPodSandbox()).length, 1);
  });

  it('terminates a pod in the run that wrote its terminal phase, not when the API echoes it: its volumes torn down, the pod directory kept', async () => {
    h.store.set(UID, basePod((p) => {
      p.spec!.restartPolicy = 'Never';
      p.spec!.volumes = [{ name: 'scratch', emptyDir: {} }];
    }));
    await h.reconciler().reconcile(ref);
    const podDir = path.join(h.root, 'pods', UID);
    const scratch = path.join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    assert.ok(existsSync(scratch), 'the emptyDir while the pod runs');
    // The API's object stays as the first run left it (Running): no echo of the next write.
    const running = structuredClone(h.store.get(UID)!);
    h.store.set = function keepApiObject(uid) { return Map.prototype.set.call(this, uid, running) as typeof h.store; };
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'syncing');
    for (const c of await h.runtime.listContainers()) h.runtime.setContainerExited(c.id, 0);
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Succeeded');
    assert.equal(h.store.get(UID)?.status?.phase, 'Running', 'the API object still says Running');
    const record = h.sync().lifecycle.get(UID);
    assert.equal(record?.phase, 'terminated');
    assert.equal(record?.terminatedAt, h.clock.now());
    assert.equal(existsSync(path.join(podDir, 'volumes')), false, 'the volumes torn down');
    assert.ok(existsSync(podDir), 'the pod directory (its termination messages) kept until the pod is deleted');
    assert.equal(h.store.has(UID), true);
  });

  it('hands a finished container\'s status over before it stops the sandbox, the phase held until nothing runs (the kubelet\'s SyncPod order)', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.restartPolicy = 'Never')));
    await h.reconciler().reconcile(ref);
    const seen: string[] = [];
    const write = h.status.setPodStatus.bind(h.status);
    h.status.setPodStatus = (pod, status) => {
      const states = (status.containerStatuses ?? []).map((c) => (c.state?.terminated ? 'terminated' : c.state?.running ? 'running' : 'waiting'));
      seen.push(`${h.runtime.callsTo('stopPodSandbox').length} sandbox stops: ${status.phase ?? ''} [${states.join(' ')}]`);
      write(pod, status);
    };
    for (const c of await h.runtime.listContainers()) h.runtime.setContainerExited(c.id, 0);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(seen, ['0 sandbox stops: Running [terminated terminated]', '1 sandbox stops: Succeeded [terminated terminated]']);
  });

  it('keeps a pod syncing, and its volumes, when its container exits under restartPolicy Always', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.volumes = [{ name: 'scratch', emptyDir: {} }])));
    await h.reconciler().reconcile(ref);
    for (const c of await h.runtime.listContainers()) h.runtime.setContainerExited(c.id, 0);
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Running');
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'syncing');
    assert.ok(existsSync(path.join(h.root, 'pods', UID, 'volumes', 'kubernetes.io~empty-dir', 'scratch')));
  });

  it('finishes a restartPolicy Never pod as Succeeded and never starts it again', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.restartPolicy = 'Never')));
    await h.reconciler().reconcile(ref);
    for (const c of await h.runtime.listContainers()) h.runtime.setContainerExited(c.id, 0);
    await h.reconciler().reconcile(ref); // kills the pod (sandbox stopped)
    await h.reconciler().reconcile(ref); // reports the terminal phase
    assert.equal(h.status.last()?.phase, 'Succeeded');
    const creates = h.runtime.callsTo('createContainer').length;
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('createContainer').length, creates);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
  });
});

/** The pod's fingerprint as PLEG's listing of the runtime builds it. */
async function listedFingerprint(h: ReconcilerHarness): Promise<string> {
  return snapshotOfListing(await h.runtime.listPodSandbox(), await h.runtime.listContainers()).get(UID)?.fingerprint ?? '';
}

describe('PodReconciler reports what it saw of the runtime (PLEG drops the echo of its own work)', () => {
  it('reports the state it started the pod into, then nothing left once it removed the deleted pod; not a change made since', async () => {
    const sightings = new RuntimeSightings();
    const h = await createReconcilerHarness({ sightings });
    try {
      h.store.set(UID, basePod());
      await h.reconciler().reconcile(ref);
      const running = await listedFingerprint(h);
      assert.match(running, /container\/.*=CONTAINER_RUNNING.*sandbox\/.*=SANDBOX_READY/);
      assert.equal(sightings.alreadyReported(UID, running), true);
      await h.reconciler().reconcile(ref);
      const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
      assert.ok(app !== undefined);
      h.runtime.setContainerExited(app.id, 1);
      assert.equal(sightings.alreadyReported(UID, await listedFingerprint(h)), false, 'an exit no reconcile saw is not reported');
      await h.reconciler().reconcile(ref);
      assert.equal(sightings.alreadyReported(UID, await listedFingerprint(h)), true, 'the restart the next run made is');
      h.store.set(UID, basePod((p) => {
        p.metadata!.deletionTimestamp = new Date();
        p.metadata!.deletionGracePeriodSeconds = 0;
        p.status = h.status.last();
      }));
      await h.reconciler().reconcile(ref);
      assert.equal(await listedFingerprint(h), '');
      assert.equal(sightings.alreadyReported(UID, ''), true);
    } finally {
      await h.cleanup();
    }
  });
});

describe('PodReconciler reports a state only when nothing is left to do from it', () => {
  it('does not report the state a sidecar start reached, since the app starts from it: PLEG must hand that change on', async () => {
    const sightings = new RuntimeSightings();
    const h = await createReconcilerHarness({ sightings });
    try {
      h.store.set(UID, basePod((p) => {
        p.spec!.initContainers = [{ name: 'proxy', image: 'busybox:1.35', command: ['sleep', '3600'], restartPolicy: 'Always' }];
        p.spec!.containers = [{ name: 'app', image: 'busybox:1.35', command: ['sleep', '3600'] }];
      }));
      await h.reconciler().reconcile(ref);
      const started = h.runtime.callsTo('createContainer').map((c) => (c.args[1] as { metadata: { name: string } }).metadata.name);
      assert.deepEqual(started, ['proxy'], 'the first run starts only the sidecar');
      assert.equal(sightings.alreadyReported(UID, await listedFingerprint(h)), false, 'the sidecar running calls for the app: not this run\'s last word');
      await h.reconciler().reconcile(ref);
      assert.deepEqual(h.runtime.callsTo('createContainer').map((c) => (c.args[1] as { metadata: { name: string } }).metadata.name), ['proxy', 'app']);
      assert.equal(sightings.alreadyReported(UID, await listedFingerprint(h)), true, 'with the app running nothing is left to do');
    } finally {
      await h.cleanup();
    }
  });
});

describe('PodReconciler restart backoff', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('restarts a crashing container once at once, then holds it in CrashLoopBackOff and asks to be requeued', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const appId = async (): Promise<string> => (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } })).sort((a, b) => Number(b.createdAt - a.createdAt))[0]?.id ?? '';
    await h.clock.advance(1000);
    h.runtime.setContainerExited(await appId(), 1);
    await h.clock.advance(1000);
    await h.reconciler().reconcile(ref); // first restart: no backoff yet
    await h.clock.advance(1000);
    h.runtime.setContainerExited(await appId(), 1);
    const outcome = await h.reconciler().reconcile(ref);
    assert.ok((outcome.requeueAfterMs ?? 0) > 0 && (outcome.requeueAfterMs ?? 0) <= 10_000, `requeue after ${outcome.requeueAfterMs ?? 'none'}`);
    const app = h.status.last()?.containerStatuses?.find((c) => c.name === 'app');
    assert.equal(app?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.match(app?.state?.waiting?.message ?? '', /^back-off 10s restarting failed container=app pod=web_default\(uid-1\)$/);
    assert.equal(app?.lastState?.terminated?.exitCode, 1);
    assert.equal(app?.restartCount, 1);
    assert.ok(h.events.events.some((e) => e.reason === 'BackOff' && e.message.startsWith('Back-off restarting failed container app')));
  });
});
