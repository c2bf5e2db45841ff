/**
 * The in-place restart of a whole pod (`RestartAllContainers`) through the assembled reconciler and
 * the recording fake runtime, run after run as the queue would run them: a container exits with a
 * listed code, one run removes every container (the running ones stopped at once) and keeps the
 * sandbox, asking for the next run at once; that run starts the pod again from its init container,
 * each container counting on from its logs; and nothing restarts again (the upstream "should allow
 * multiple RestartAllContainers actions and not introduce a loop").
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerConfig } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { UID } from '../../test/doubles/pod-fixtures.js';

const restartAllOn = (operator: string, values: number[]): object => ({ restartPolicy: 'Never', restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator, values } }] });

const busybox = (name: string, more: object = {}): V1Container => ({ name, image: 'busybox:1.35', command: ['sh', '-c', 'sleep 3600'], ...more });

/** Pod Never: init `setup`; `app` restarts all containers on 42; `worker` (or as given). */
function restartAllPod(containers: V1Container[] = [busybox('app', restartAllOn('In', [42])), busybox('worker')], init: V1Container[] = [busybox('setup')]): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: UID, creationTimestamp: new Date('2026-01-01T00:00:00Z') },
    spec: { nodeName: 'node-a', restartPolicy: 'Never', initContainers: init, containers, terminationGracePeriodSeconds: 30 },
    status: { phase: 'Pending' },
  };
}

describe('a pod restarting all its containers in place, through the reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  /** The pod's container instances in the runtime: `<name>#<attempt>:<state>` with the ID. */
  async function instances(): Promise<{ id: string; name: string; attempt: number; state: string }[]> {
    const listed = await h.runtime.listContainers();
    return listed.map((c) => ({ id: c.id, name: c.metadata.name, attempt: c.metadata.attempt, state: c.state })).sort((a, b) => a.name.localeCompare(b.name) || a.attempt - b.attempt);
  }

  async function idOf(name: string): Promise<string> {
    const found = (await instances()).find((c) => c.name === name && c.state !== 'CONTAINER_EXITED');
    assert.ok(found !== undefined, `a live ${name}`);
    return found.id;
  }

  /** Writes each container's log file where the runtime would (the fake writes none): what the new instances count from. */
  async function writeLogs(): Promise<void> {
    for (const c of await h.runtime.listContainers()) {
      const logPath = h.runtime.getContainer(c.id)?.logPath ?? '';
      await mkdir(path.dirname(logPath), { recursive: true });
      await writeFile(logPath, 'a line\n');
    }
  }

  function statusOf(s: V1PodStatus | undefined, name: string): V1ContainerStatus | undefined {
    return [...(s?.initContainerStatuses ?? []), ...(s?.containerStatuses ?? [])].find((c) => c.name === name);
  }

  function restartingCondition(s: V1PodStatus | undefined): string | undefined {
    return s?.conditions?.find((c) => c.type === 'AllContainersRestarting')?.status;
  }

  /** Runs the pod up to its app containers running: the init container started, exited 0, then the rest (a sidecar first). */
  async function startPod(pod: V1Pod): Promise<void> {
    h.store.set(UID, pod);
    await h.reconciler().reconcile(ref);
    if ((pod.spec?.initContainers ?? []).length > 0) {
      h.runtime.setContainerExited(await idOf('setup'), 0);
      await h.reconciler().reconcile(ref);
      // A sidecar starts in its own run before the app containers; a no-op otherwise.
      await h.reconciler().reconcile(ref);
    }
    await writeLogs();
  }

  it('removes every container (the running ones stopped at once, in reverse order, the source last), keeps the sandbox, and starts the pod again from its init container', async () => {
    await startPod(restartAllPod());
    const sandboxId = (await h.runtime.listPodSandbox())[0]?.id;
    const before = await instances();
    assert.deepEqual(before.map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#0:CONTAINER_RUNNING', 'setup#0:CONTAINER_EXITED', 'worker#0:CONTAINER_RUNNING']);
    const ids = new Map(before.map((c) => [c.name, c.id]));
    h.runtime.setContainerExited(ids.get('app') ?? '', 42);
    const statusesBefore = h.status.statuses.length;

    const outcome = await h.reconciler().reconcile(ref);

    assert.deepEqual(await instances(), [], 'every container is gone from the runtime');
    assert.deepEqual(h.runtime.callsTo('removeContainer').map((c) => c.args[0]), [ids.get('worker'), ids.get('setup'), ids.get('app')], 'regular, then init, the source last');
    assert.deepEqual(h.runtime.callsTo('stopContainer').map((c) => [c.args[0], c.args[1]]), [[ids.get('worker'), 2]], 'only the running one is stopped, with no grace (the 2 s minimal window)');
    assert.deepEqual(h.events.events.filter((e) => e.reason === 'Killing').map((e) => [e.fieldPath, e.message]), [['spec.containers{worker}', 'killing']]);
    assert.deepEqual((await h.runtime.listPodSandbox()).map((s) => [s.id, s.state]), [[sandboxId, 'SANDBOX_READY']], 'the sandbox stays');
    assert.equal(outcome.requeueAfterMs, 1, 'the next run is asked for at once');
    const written = h.status.statuses.slice(statusesBefore);
    assert.equal(restartingCondition(written[0]), 'True', 'the exit is reported before the removal, with the condition True');
    assert.equal(statusOf(written[0], 'app')?.state?.terminated?.exitCode, 42);
    const cleaned = h.status.last();
    assert.equal(restartingCondition(cleaned), 'False');
    assert.deepEqual(['setup', 'app', 'worker'].map((n) => [n, statusOf(cleaned, n)?.state?.waiting?.reason, statusOf(cleaned, n)?.restartCount]), [
      ['setup', 'RestartingAllContainers', 1],
      ['app', 'RestartingAllContainers', 1],
      ['worker', 'RestartingAllContainers', 1],
    ]);
    assert.equal(cleaned?.phase, 'Running');

    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['setup#1:CONTAINER_RUNNING'], 'the init container first, counting on from its log');
    assert.equal(h.status.last()?.phase, 'Pending');
    h.runtime.setContainerExited(await idOf('setup'), 0);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#1:CONTAINER_RUNNING', 'setup#1:CONTAINER_EXITED', 'worker#1:CONTAINER_RUNNING']);
    assert.deepEqual((await h.runtime.listPodSandbox()).map((s) => s.id), [sandboxId]);
    const again = h.status.last();
    assert.equal(again?.phase, 'Running');
    assert.equal(restartingCondition(again), 'False');
    for (const name of ['setup', 'app', 'worker']) {
      assert.equal(statusOf(again, name)?.restartCount, 1, name);
      assert.equal(statusOf(again, name)?.lastState?.terminated?.reason, 'RestartingAllContainers', name);
    }
    const created = h.runtime.callsTo('createContainer').map((c) => (c.args[1] as ContainerConfig).metadata);
    assert.deepEqual(created.slice(-3).map((m) => [m.name, m.attempt]), [['setup', 1], ['app', 1], ['worker', 1]]);
  });

  it('restarts nothing when the exit code is not one a rule lists', async () => {
    await startPod(restartAllPod());
    h.runtime.setContainerExited(await idOf('app'), 1);
    const outcome = await h.reconciler().reconcile(ref);
    assert.equal(outcome.requeueAfterMs, undefined);
    assert.deepEqual(h.runtime.callsTo('removeContainer'), []);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#0:CONTAINER_EXITED', 'setup#0:CONTAINER_EXITED', 'worker#0:CONTAINER_RUNNING'], 'app (Never) stays exited, worker runs on');
    assert.equal(restartingCondition(h.status.last()), 'False');
    assert.equal(statusOf(h.status.last(), 'app')?.state?.terminated?.exitCode, 1);
  });

  it('allows a restart on each of several containers and does not loop: the container stopped by the restart is removed before its exit can start another', async () => {
    // The second container restarts all on any non-zero exit: the SIGKILL of the restart (137) would match it.
    await startPod(restartAllPod([busybox('source', restartAllOn('In', [42])), busybox('regular', restartAllOn('NotIn', [0]))], []));
    h.runtime.setContainerExited(await idOf('source'), 42);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('removeContainer').length, 2);
    for (let run = 0; run < 4; run++) await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('removeContainer').length, 2, 'no second restart');
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['regular#1:CONTAINER_RUNNING', 'source#1:CONTAINER_RUNNING']);
    assert.equal(restartingCondition(h.status.last()), 'False');
    // A second restart, from the other container this time.
    await writeLogs();
    h.runtime.setContainerExited(await idOf('regular'), 3);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('removeContainer').length, 4);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['regular#2:CONTAINER_RUNNING', 'source#2:CONTAINER_RUNNING']);
    assert.deepEqual(['source', 'regular'].map((n) => statusOf(h.status.last(), n)?.restartCount), [2, 2]);
  });

  it('judges by the last status handed over while the API still shows an older one (its write not landed yet)', async () => {
    await startPod(restartAllPod());
    const stale = h.store.get(UID);
    assert.ok(stale !== undefined);
    h.runtime.setContainerExited(await idOf('app'), 42);
    await h.reconciler().reconcile(ref);
    // The pod source still has the object from before the restart: the API shows app running.
    h.store.set(UID, stale);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['setup#1:CONTAINER_RUNNING']);
    assert.deepEqual(['setup', 'app', 'worker'].map((n) => statusOf(h.status.last(), n)?.restartCount), [1, 1, 1]);
    h.store.set(UID, stale);
    h.runtime.setContainerExited(await idOf('setup'), 0);
    await h.reconciler().reconcile(ref);
    h.store.set(UID, stale);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('removeContainer').length, 3, 'one restart only');
    assert.deepEqual(['setup', 'app', 'worker'].map((n) => statusOf(h.status.last(), n)?.restartCount), [1, 1, 1]);
  });

  it('restarts all containers on a sidecar exit: the sidecar is not restarted alone first', async () => {
    const proxy = busybox('proxy', { restartPolicy: 'Always', restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }] });
    await startPod(restartAllPod([busybox('app')], [busybox('setup'), proxy]));
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#0:CONTAINER_RUNNING', 'proxy#0:CONTAINER_RUNNING', 'setup#0:CONTAINER_EXITED']);
    h.runtime.setContainerExited(await idOf('proxy'), 42);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await instances(), []);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['setup#1:CONTAINER_RUNNING']);
    h.runtime.setContainerExited(await idOf('setup'), 0);
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#1:CONTAINER_RUNNING', 'proxy#1:CONTAINER_RUNNING', 'setup#1:CONTAINER_EXITED']);
    assert.deepEqual(['setup', 'proxy', 'app'].map((n) => statusOf(h.status.last(), n)?.restartCount), [1, 1, 1]);
  });

  it('restarts all containers on the exit of a container that already restarted alone, removing every instance of it', async () => {
    const app = busybox('app', { restartPolicy: 'Always', restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }] });
    await startPod(restartAllPod([app, busybox('worker')], []));
    h.runtime.setContainerExited(await idOf('app'), 1);
    await h.reconciler().reconcile(ref);
    await writeLogs();
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#0:CONTAINER_EXITED', 'app#1:CONTAINER_RUNNING', 'worker#0:CONTAINER_RUNNING'], 'an unlisted code restarts it alone, by its policy');
    h.runtime.setContainerExited(await idOf('app'), 42);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await instances(), []);
    assert.deepEqual(['app', 'worker'].map((n) => statusOf(h.status.last(), n)?.restartCount), [2, 1]);
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['app#2:CONTAINER_RUNNING', 'worker#1:CONTAINER_RUNNING']);
    assert.deepEqual(['app', 'worker'].map((n) => statusOf(h.status.last(), n)?.restartCount), [2, 1]);
  });

  it('restarts the init containers and the sidecar on an init container exit, before any app container ran', async () => {
    const sourceInit = busybox('source-init', restartAllOn('In', [42]));
    h.store.set(UID, restartAllPod([busybox('app')], [busybox('proxy', { restartPolicy: 'Always' }), busybox('setup'), sourceInit]));
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    h.runtime.setContainerExited(await idOf('setup'), 0);
    await h.reconciler().reconcile(ref);
    await writeLogs();
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['proxy#0:CONTAINER_RUNNING', 'setup#0:CONTAINER_EXITED', 'source-init#0:CONTAINER_RUNNING']);
    h.runtime.setContainerExited(await idOf('source-init'), 42);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await instances(), []);
    const cleaned = h.status.last();
    assert.notEqual(cleaned?.phase, 'Failed', 'an init container whose exit restarts all containers has not failed the pod');
    assert.deepEqual(['proxy', 'setup', 'source-init', 'app'].map((n) => [n, statusOf(cleaned, n)?.restartCount]), [['proxy', 1], ['setup', 1], ['source-init', 1], ['app', 0]], 'the app container never ran: nothing to count');
    await h.reconciler().reconcile(ref);
    assert.deepEqual((await instances()).map((c) => `${c.name}#${c.attempt}:${c.state}`), ['proxy#1:CONTAINER_RUNNING']);
  });

  it('goes on with a removal a failure cut short, and starts nothing meanwhile', async () => {
    await startPod(restartAllPod());
    h.runtime.setContainerExited(await idOf('app'), 42);
    h.runtime.injectError('removeContainer', new Error('runtime hiccup'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.equal(restartingCondition(h.status.last()), 'True');
    assert.equal(h.runtime.callsTo('createContainer').length, 3, 'nothing started');
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await instances(), []);
    assert.equal(restartingCondition(h.status.last()), 'False');
  });
});
