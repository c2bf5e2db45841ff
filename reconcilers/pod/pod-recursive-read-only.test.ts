/**
 * Component test of `recursiveReadOnly` through the assembled per-pod machinery and the recording
 * fake runtime: the CRI mount is recursive where the pod's handler supports it, and a container
 * that insists (`Enabled`) on a handler that cannot fails with the kubelet's reason and message.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';

let h: ReconcilerHarness;
beforeEach(async () => {
  h = await createReconcilerHarness();
});
afterEach(async () => {
  await h.cleanup();
});

function podWithReadOnlyMount(mode: 'IfPossible' | 'Enabled'): V1Pod {
  return basePod((p) => {
    p.spec!.volumes = [{ name: 'data', emptyDir: {} }];
    p.spec!.containers = [{ name: 'app', image: 'busybox:1.35', volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true, recursiveReadOnly: mode }] }];
  });
}

function dataMountsSent(): (boolean | undefined)[] {
  return h.runtime.callsTo('createContainer').map((c) => (c.args[1] as ContainerConfig).mounts.find((m) => m.containerPath === '/data')?.recursiveReadOnly);
}

describe('recursive read-only mounts', () => {
  it('sends recursive_read_only where the handler supports it (IfPossible and Enabled)', async () => {
    for (const mode of ['IfPossible', 'Enabled'] as const) {
      h.store.set(UID, podWithReadOnlyMount(mode));
      await h.reconciler().reconcile(ref);
      h.store.delete(UID);
      await h.reconciler().reconcile(ref);
    }
    assert.deepEqual(dataMountsSent(), [true, true]);
  });

  it('falls back to a plain read-only mount for IfPossible, and refuses Enabled, where the handler cannot', async () => {
    h.runtime.handlers = [{ name: '', recursiveReadOnlyMounts: false, userNamespaces: true }];
    h.store.set(UID, podWithReadOnlyMount('IfPossible'));
    await h.reconciler().reconcile(ref);
    assert.deepEqual(dataMountsSent(), [undefined]);
    h.store.delete(UID);
    await h.reconciler().reconcile(ref);
    h.store.set(UID, podWithReadOnlyMount('Enabled'));
    await h.reconciler().reconcile(ref).catch(() => undefined);
    assert.equal(h.runtime.callsTo('createContainer').length, 1, 'no container for Enabled');
    const waiting = h.status.last()?.containerStatuses?.[0]?.state?.waiting;
    assert.deepEqual([waiting?.reason, waiting?.message], ['CreateContainerConfigError', 'volume "data" requested recursive read-only mode, but it is not supported by the runtime']);
  });
});
