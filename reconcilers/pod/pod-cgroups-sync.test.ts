/**
 * Pod cgroups through the assembled per-pod machinery (fake runtime, in-memory cgroup filesystem):
 * the pod's cgroup exists before its sandbox and is the cgroup parent of the sandbox and of every
 * container's sandbox config; it goes when the pod terminates; a cgroup that cannot be made holds
 * the pod before any sandbox with the kubelet's event.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { PodSandboxConfig } from '../../cri/types.js';
import { settle } from '../../test/doubles/fake-clock.js';
import { FakeCgroupFs } from '../../test/doubles/fake-cgroupfs.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { isPodSetupError } from '../model/sync-errors.js';

const POD_CGROUP = `/kubepods/besteffort/pod${UID}`;
let h: ReconcilerHarness | undefined;

async function harness(fs: FakeCgroupFs): Promise<ReconcilerHarness> {
  h = await createReconcilerHarness({ cgroups: { fs, cgroupRoot: '/', allocatable: () => ({ milliCpu: 2000, memoryBytes: 2 ** 32 }) } });
  await h.sync().cgroups?.start();
  return h;
}

afterEach(async () => {
  await h?.cleanup();
});

describe('pod cgroups in the pod sync', () => {
  it('makes the cgroup before the sandbox, names it as the cgroup parent, removes it when the pod terminates', async () => {
    const fs = new FakeCgroupFs();
    const t = await harness(fs);
    fs.calls.length = 0;
    t.store.set(UID, basePod());
    await t.reconciler().reconcile(ref);
    assert.deepEqual(fs.cgroups.get(POD_CGROUP), { cpuShares: 2 });
    const sandboxes = t.runtime.callsTo('runPodSandbox').map((c) => c.args[0] as PodSandboxConfig);
    assert.deepEqual(sandboxes.map((c) => c.linux?.cgroupParent), [POD_CGROUP]);
    const containers = t.runtime.callsTo('createContainer').map((c) => c.args[2] as PodSandboxConfig);
    assert.deepEqual(containers.map((c) => c.linux?.cgroupParent), [POD_CGROUP, POD_CGROUP]);
    t.store.set(UID, basePod((p) => {
      p.metadata!.deletionTimestamp = new Date();
      p.metadata!.deletionGracePeriodSeconds = 0;
      p.status = t.status.last();
    }));
    await t.reconciler().reconcile(ref);
    await settle();
    assert.equal(fs.cgroups.has(POD_CGROUP), false);
    assert.deepEqual(fs.calls.filter((c) => c.endsWith(POD_CGROUP)), [`create ${POD_CGROUP}`, `destroy ${POD_CGROUP}`]);
  });

  it('holds the pod before any sandbox when its cgroup cannot be made: FailedCreatePodContainer', async () => {
    const fs = new FakeCgroupFs();
    const t = await harness(fs);
    fs.create = () => Promise.reject(new Error('mkdir: read-only file system'));
    t.store.set(UID, basePod());
    const error = await t.reconciler().reconcile(ref).then(() => undefined, (e: unknown) => e);
    assert.ok(isPodSetupError(error));
    assert.equal(error.reason, 'FailedCreatePodContainer');
    assert.equal(error.message, 'unable to ensure pod container exists: mkdir: read-only file system');
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.ok(t.events.reasons().includes('FailedCreatePodContainer'));
  });
});
