/**
 * The reconciler's admission seam (the NodeAgent's `spec.paused`), against the recording fake
 * runtime: while paused, a pod without a sandbox stays Pending; everything else proceeds.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';

describe('PodReconciler admission (NodeAgent paused)', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('holds a new pod Pending with its containers ContainerCreating and a NodeletPaused event, then starts it once unpaused', async () => {
    h.paused.value = true;
    h.store.set(UID, basePod());
    const outcome = await h.reconciler().reconcile(ref);
    assert.deepEqual(outcome, {});
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 0);
    const held = h.status.statuses.at(-1);
    assert.equal(held?.phase, 'Pending');
    assert.deepEqual(held?.containerStatuses?.map((c) => c.state?.waiting?.reason), ['ContainerCreating', 'ContainerCreating']);
    assert.deepEqual(h.events.reasons(), ['NodeletPaused']);
    h.paused.value = false;
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    assert.equal(h.status.statuses.at(-1)?.phase, 'Running');
  });

  it('keeps a running pod running and restarts its exited container while paused', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.paused.value = true;
    const app = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0];
    h.runtime.setContainerExited(app?.id ?? '', 1);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 1);
    assert.equal(h.runtime.callsTo('stopPodSandbox').length, 0);
    assert.equal(h.status.statuses.at(-1)?.containerStatuses?.find((c) => c.name === 'app')?.restartCount, 1);
    assert.ok(!h.events.reasons().includes('NodeletPaused'));
  });

  it('still deletes a pod while paused', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.paused.value = true;
    h.store.set(UID, basePod((p) => {
      p.metadata!.deletionTimestamp = new Date();
      p.metadata!.deletionGracePeriodSeconds = 1;
      p.status = h.status.statuses.at(-1);
    }));
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listPodSandbox(), []);
    assert.deepEqual(h.status.deleted, [UID]);
  });
});
