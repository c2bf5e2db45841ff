/**
 * Component tests of what nodelet refuses, through the assembled per-pod machinery and the
 * recording fake runtime: every refusal is visible (a Warning event and the kubelet's reason) and
 * creates no sandbox. Rejected at admission (`os.name`): phase Failed. Refused in the sandbox step
 * (`hostUsers: false`, `resourceClaims`, `volumeDevices`, whose volume nodelet refuses to map): Pending, containers
 * ContainerCreating, the event on every attempt.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { isPodSetupError } from '../model/sync-errors.js';

let h: ReconcilerHarness;
beforeEach(async () => {
  h = await createReconcilerHarness();
});
afterEach(async () => {
  await h.cleanup();
});

/** Reconciles twice; returns the setup errors thrown. */
async function reconcileTwice(pod: V1Pod): Promise<unknown[]> {
  h.store.set(UID, pod);
  const errors: unknown[] = [];
  for (let i = 0; i < 2; i++) await h.reconciler().reconcile(ref).catch((e: unknown) => errors.push(e));
  return errors;
}

function assertHeldPending(errors: unknown[], reason: string, message: string): void {
  assert.equal(errors.length, 2, 'each attempt fails');
  for (const error of errors) {
    assert.ok(isPodSetupError(error));
    assert.equal(error.reason, reason);
    assert.equal(error.message, message);
  }
  assert.equal(h.runtime.callsTo('runPodSandbox').length, 0, 'no sandbox');
  assert.equal(h.runtime.callsTo('createContainer').length, 0, 'no container');
  const warnings = h.events.events.filter((e) => e.type === 'Warning');
  assert.deepEqual(warnings.map((e) => [e.reason, e.message]), [[reason, message], [reason, message]], 'the event on every attempt');
  const status = h.status.last();
  assert.equal(status?.phase, 'Pending');
  assert.deepEqual(status?.containerStatuses?.map((c) => c.state?.waiting?.reason), ['ContainerCreating', 'ContainerCreating']);
}

describe('refused pods', () => {
  it('rejects a pod for another OS at admission: Failed, PodOSNotSupported, one event, no sandbox', async () => {
    await reconcileTwice(basePod((p) => { p.spec!.os = { name: 'windows' }; }));
    const status = h.status.last();
    assert.deepEqual([status?.phase, status?.reason, status?.message], ['Failed', 'PodOSNotSupported', "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"]);
    assert.deepEqual(h.events.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'PodOSNotSupported', "Failed to admit pod as the OS field doesn't match node OS"]]);
    assert.equal(h.runtime.callsTo('runPodSandbox').length, 0);
  });

  it('holds hostUsers false Pending on a runtime that lists no handler (containerd 1.6): FailedCreatePodSandBox, no user namespaces', async () => {
    h.runtime.handlers = [];
    const errors = await reconcileTwice(basePod((p) => { p.spec!.hostUsers = false; p.spec!.dnsPolicy = 'Default'; }));
    assertHeldPending(errors, 'FailedCreatePodSandBox', `Failed to create pod sandbox: can't set \`spec.hostUsers: false\`, runtime does not support user namespaces`);
  });

  it("holds hostUsers false Pending when its RuntimeClass's handler has no user namespaces, or is not the runtime's", async () => {
    h.runtime.handlers = [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: true }, { name: 'gvisor', recursiveReadOnlyMounts: false, userNamespaces: false }];
    h.runtimeClasses.set('sandboxed', 'gvisor');
    let errors = await reconcileTwice(basePod((p) => { p.spec!.hostUsers = false; p.spec!.runtimeClassName = 'sandboxed'; p.spec!.dnsPolicy = 'Default'; }));
    assertHeldPending(errors, 'FailedCreatePodSandBox', `Failed to create pod sandbox: can't set \`spec.hostUsers: false\`, RuntimeClass handler "gvisor" does not support user namespaces`);
    h.events.events.length = 0;
    h.runtimeClasses.set('sandboxed', 'kata');
    errors = await reconcileTwice(basePod((p) => { p.spec!.hostUsers = false; p.spec!.runtimeClassName = 'sandboxed'; p.spec!.dnsPolicy = 'Default'; }));
    assertHeldPending(errors, 'FailedCreatePodSandBox', `Failed to create pod sandbox: can't set \`spec.hostUsers: false\`, RuntimeClass handler "kata" does not support user namespaces: the handler "kata" is not known`);
  });

  it('holds a pod with resource claims Pending: FailedPrepareDynamicResources', async () => {
    const errors = await reconcileTwice(basePod((p) => { p.spec!.resourceClaims = [{ name: 'gpu', resourceClaimName: 'gpu-claim' }]; }));
    assertHeldPending(errors, 'FailedPrepareDynamicResources', 'Failed to prepare dynamic resources: nodelet has no dynamic resource allocation (no DRA driver is registered on this node): cannot prepare resource claims "gpu"');
  });

  it('holds a pod with volumeDevices Pending: its PVC volume fails to mount (FailedMount)', async () => {
    const errors = await reconcileTwice(basePod((p) => {
      p.spec!.volumes = [{ name: 'raw', persistentVolumeClaim: { claimName: 'block' } }];
      p.spec!.containers[0]!.volumeDevices = [{ name: 'raw', devicePath: '/dev/xvda' }];
    }));
    assertHeldPending(errors, 'FailedMount', 'MountVolume.SetUp failed for volume "raw" : it is used in volumeDevices: raw block volumes are not supported by nodelet');
  });
});
