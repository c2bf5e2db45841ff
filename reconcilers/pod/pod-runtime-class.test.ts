/**
 * A pod's RuntimeClass through the assembled per-pod machinery: the sandbox runs with the class's
 * handler (not its name), no class name means the runtime's default handler, and a class the
 * cluster does not have fails the sandbox step with the kubelet's event and creates nothing.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { isPodSetupError } from '../model/sync-errors.js';

let h: ReconcilerHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
});

function handlersGiven(t: ReconcilerHarness): unknown[] {
  return t.runtime.callsTo('runPodSandbox').map((c) => c.args[1]);
}

describe('RuntimeClass handlers', () => {
  it('runs the sandbox with the handler of the pod\'s RuntimeClass, not the class name', async () => {
    const t = (h = await createReconcilerHarness());
    t.runtimeClasses.set('sandboxed', 'runc');
    t.store.set(UID, basePod((p) => { p.spec!.runtimeClassName = 'sandboxed'; }));
    await t.reconciler().reconcile(ref);
    assert.deepEqual(handlersGiven(t), ['runc']);
  });

  it('uses the runtime\'s default handler for a pod without a RuntimeClass', async () => {
    const t = (h = await createReconcilerHarness());
    t.store.set(UID, basePod());
    await t.reconciler().reconcile(ref);
    assert.deepEqual(handlersGiven(t), ['']);
  });

  it('fails the sandbox step for a RuntimeClass that does not exist: FailedCreatePodSandBox, no sandbox', async () => {
    const t = (h = await createReconcilerHarness());
    t.store.set(UID, basePod((p) => { p.spec!.runtimeClassName = 'missing'; }));
    const error = await t.reconciler().reconcile(ref).then(() => undefined, (e: unknown) => e);
    assert.ok(isPodSetupError(error));
    assert.equal(error.reason, 'FailedCreatePodSandBox');
    assert.deepEqual(handlersGiven(t), []);
    assert.equal(t.runtime.callsTo('createContainer').length, 0);
    const events = t.events.events.filter((e) => e.reason === 'FailedCreatePodSandBox');
    assert.deepEqual(events.map((e) => [e.type, e.message]), [['Warning', 'Failed to create pod sandbox: runtimeclass.node.k8s.io "missing" not found']]);
  });
});
