/**
 * Component test of `kubectl debug` in the assembled reconciler over the recording fake runtime:
 * an ephemeral container added to a running pod's spec (as the `ephemeralcontainers` subresource
 * does, the informer delivering the updated pod) is started once in the pod's sandbox, in its
 * target's process namespace, with stdin and tty; it is reported in `ephemeralContainerStatuses`,
 * never restarted after it exits, leaves the regular containers untouched, and goes with the pod.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { Container, ContainerConfig } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

const NAME = 'io.kubernetes.container.name';

function withDebugger(pod: V1Pod): V1Pod {
  const spec = pod.spec!;
  const debuggerSpec = { name: 'debugger', image: 'busybox:1.35', command: ['sh'], stdin: true, tty: true, targetContainerName: 'app' };
  return { ...pod, metadata: { ...pod.metadata, resourceVersion: '2' }, spec: { ...spec, ephemeralContainers: [debuggerSpec] } };
}

async function containersNamed(h: ReconcilerHarness, name: string): Promise<Container[]> {
  return h.runtime.listContainers({ labelSelector: { [NAME]: name } });
}

function createdConfigs(h: ReconcilerHarness, name: string): ContainerConfig[] {
  return h.runtime
    .callsTo('createContainer')
    .map((c) => c.args[1] as ContainerConfig)
    .filter((c) => c.metadata.name === name);
}

describe('ephemeral containers in the assembled reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('starts the debugger once in the target\'s pid namespace, reports it, never restarts it, and removes it with the pod', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const [app] = await containersNamed(h, 'app');
    const [sidecar] = await containersNamed(h, 'sidecar');
    assert.ok(app !== undefined && sidecar !== undefined);

    h.store.set(UID, withDebugger(h.store.get(UID)!));
    await h.reconciler().reconcile(ref);
    const debuggers = await containersNamed(h, 'debugger');
    assert.equal(debuggers.length, 1);
    const [dbg] = debuggers;
    assert.equal(dbg?.state, 'CONTAINER_RUNNING');
    assert.equal(dbg.podSandboxId, app.podSandboxId, 'in the pod\'s own sandbox');
    const [config] = createdConfigs(h, 'debugger');
    assert.deepEqual(config?.linux?.securityContext?.namespaceOptions, { network: 'POD', pid: 'TARGET', ipc: 'POD', targetId: app.id, userNamespace: { mode: 'NODE', uids: [], gids: [] } });
    assert.deepEqual([config.stdin, config.tty, config.metadata.attempt], [true, true, 0]);
    assert.equal(config.annotations['nodelet.dev/container-kind'], 'ephemeral');
    const started = h.events.events.find((e) => e.reason === 'Started' && e.message === 'Started container debugger');
    assert.equal(started?.fieldPath, 'spec.ephemeralContainers{debugger}');
    const running = h.status.last();
    assert.deepEqual(running?.ephemeralContainerStatuses?.map((s) => [s.name, Object.keys(s.state ?? {})[0], s.containerID]), [['debugger', 'running', `containerd://${dbg.id}`]]);
    assert.equal(running?.phase, 'Running');
    assert.equal(running?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

    h.runtime.setContainerExited(dbg.id, 3);
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    assert.equal((await containersNamed(h, 'debugger')).length, 1, 'never restarted');
    assert.equal(createdConfigs(h, 'debugger').length, 1);
    const done = h.status.last();
    assert.equal(done?.ephemeralContainerStatuses?.[0]?.state?.terminated?.exitCode, 3);
    assert.equal(done?.phase, 'Running');
    assert.equal(done?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    // The regular containers were never touched: same instances, created once, restart count 0.
    assert.deepEqual((await containersNamed(h, 'app')).map((c) => [c.id, c.state]), [[app.id, 'CONTAINER_RUNNING']]);
    assert.deepEqual((await containersNamed(h, 'sidecar')).map((c) => [c.id, c.state]), [[sidecar.id, 'CONTAINER_RUNNING']]);
    assert.equal(createdConfigs(h, 'app').length + createdConfigs(h, 'sidecar').length, 2);
    assert.deepEqual(done?.containerStatuses?.map((s) => s.restartCount), [0, 0]);

    const pod = h.store.get(UID)!;
    h.store.set(UID, { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), []);
  });

  it('a running debugger is stopped with the pod', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.set(UID, withDebugger(h.store.get(UID)!));
    await h.reconciler().reconcile(ref);
    const [dbg] = await containersNamed(h, 'debugger');
    assert.equal(dbg?.state, 'CONTAINER_RUNNING');
    const stopsBefore = h.runtime.callsTo('stopContainer').filter((c) => c.args[0] === dbg.id).length;
    assert.equal(stopsBefore, 0);
    const pod = h.store.get(UID)!;
    h.store.set(UID, { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('stopContainer').filter((c) => c.args[0] === dbg.id).length, 1);
  });
});
