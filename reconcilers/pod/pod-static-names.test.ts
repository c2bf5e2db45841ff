/**
 * Static pods under one full name (an edited manifest: a new UID, the same name): the new pod
 * starts only once the old one has stopped and is gone, as the kubelet's pod workers hold it back.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { StaticPodNames } from '../lifecycle/static-pod-names.js';
import { createReconcilerHarness, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import type { PodKey } from '../../util/pod-key.js';

const OLD: PodKey = { uid: 'static-old', namespace: 'default', name: 'web' };
const NEW: PodKey = { uid: 'static-new', namespace: 'default', name: 'web' };

function staticPod(key: PodKey, command: string): V1Pod {
  return basePod((p) => {
    p.metadata = { ...p.metadata, uid: key.uid, annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': key.uid } };
    p.spec!.terminationGracePeriodSeconds = 20;
    p.spec!.containers = [{ name: 'app', image: 'busybox:1.35', command: ['sh', '-c', command] }];
  });
}

describe('static pods of one full name', () => {
  let h: ReconcilerHarness;
  let names: StaticPodNames;
  let released: string[];

  beforeEach(async () => {
    released = [];
    names = new StaticPodNames({ onReleased: (key) => released.push(key.uid) });
    h = await createReconcilerHarness({ staticPodNames: names });
  });

  afterEach(async () => {
    await h.cleanup();
  });

  const sandboxesOf = async (uid: string): Promise<number> => (await h.runtime.listPodSandbox()).filter((s) => s.metadata?.uid === uid).length;

  it("waits for the old pod of an edited manifest to stop and be gone before it starts, and reports nothing meanwhile", async () => {
    h.store.set(OLD.uid, staticPod(OLD, 'sleep 3600'));
    await h.reconciler().reconcile(OLD);
    assert.equal(await sandboxesOf(OLD.uid), 1);
    assert.equal(names.holderOf(OLD), OLD.uid);

    // The manifest is edited: the old pod is gone from its source, the new one is there.
    h.store.delete(OLD.uid);
    h.store.set(NEW.uid, staticPod(NEW, 'sleep 3601'));
    const statuses = h.status.statuses.length;
    assert.deepEqual(await h.reconciler().reconcile(NEW), { requeueAfterMs: 1000 });
    assert.equal(await sandboxesOf(NEW.uid), 0, 'nothing of the new pod runs beside the old one');
    assert.equal(h.status.statuses.length, statuses, 'no status: the mirror pod still shows the old pod');
    assert.equal(h.sync().lifecycle.get(NEW.uid), undefined, 'not admitted yet');
    assert.equal(names.holderOf(NEW), OLD.uid, 'the old pod holds the name: its mirror pod stays');

    // The old pod is stopped within its grace period, removed and forgotten: the name is free.
    await h.reconciler().reconcile(OLD);
    assert.equal(await sandboxesOf(OLD.uid), 0);
    assert.deepEqual(released, [OLD.uid]);
    assert.equal(names.holderOf(NEW), undefined);

    assert.deepEqual(await h.reconciler().reconcile(NEW), {});
    assert.equal(await sandboxesOf(NEW.uid), 1, 'the new pod starts');
    assert.equal(names.holderOf(NEW), NEW.uid);
    assert.equal(h.status.last()?.phase, 'Running');
  });

  it('lets a pod that is not static start beside anything, and a static pod with a free name at once', async () => {
    h.store.set(OLD.uid, staticPod(OLD, 'sleep 3600'));
    await h.reconciler().reconcile(OLD);
    const plain: PodKey = { uid: 'api-pod', namespace: 'default', name: 'web' };
    h.store.set(plain.uid, basePod((p) => (p.metadata = { ...p.metadata, uid: plain.uid })));
    assert.deepEqual(await h.reconciler().reconcile(plain), {});
    assert.equal(await sandboxesOf(plain.uid), 1);
  });
});
