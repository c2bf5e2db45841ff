/**
 * Component tests of `hostUsers: false` through the assembled per-pod machinery and the recording
 * fake runtime: what reaches the runtime (the sandbox's and every container's user namespace),
 * where the range is kept, and that an agent restart keeps it. The e2e suite checks the same on
 * containerd (test/e2e/user-namespaces.test.ts).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig, PodSandboxConfig, UserNamespace } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { usernsFilePath } from '../userns/userns-file.js';

let h: ReconcilerHarness;
beforeEach(async () => {
  h = await createReconcilerHarness();
});
afterEach(async () => {
  await h.cleanup();
});

async function reconcile(pod: V1Pod): Promise<void> {
  h.store.set(UID, pod);
  await h.reconciler().reconcile(ref);
}

/** The user namespace of each sandbox created and of each container created, in order. */
function sentUserNamespaces(): { sandboxes: (UserNamespace | undefined)[]; containers: (UserNamespace | undefined)[] } {
  const sandboxes = h.runtime.callsTo('runPodSandbox').map((c) => (c.args[0] as PodSandboxConfig).linux?.securityContext?.namespaceOptions?.userNamespace);
  const containers = h.runtime.callsTo('createContainer').map((c) => (c.args[1] as ContainerConfig).linux?.securityContext?.namespaceOptions?.userNamespace);
  return { sandboxes, containers };
}

describe('pods in their own user namespace (hostUsers: false)', () => {
  it("sends the pod's range to the sandbox and to every container, the same range the pod directory keeps", async () => {
    await reconcile(basePod((p) => { p.spec!.hostUsers = false; }));
    const sent = sentUserNamespaces();
    assert.equal(sent.sandboxes.length, 1);
    assert.equal(sent.containers.length, 2, "both of the fixture's containers");
    const userns = sent.sandboxes[0];
    assert.equal(userns?.mode, 'POD');
    const hostId = userns?.uids[0]?.hostId ?? 0;
    assert.ok(hostId >= 65536 && hostId % 65536 === 0, `an aligned range above the host's IDs: ${hostId}`);
    assert.deepEqual(userns?.uids, [{ hostId, containerId: 0, length: 65536 }]);
    assert.deepEqual(userns?.gids, userns?.uids);
    for (const container of sent.containers) assert.deepEqual(container, userns, "each container joins the sandbox's user namespace");
    const mounts = h.runtime.callsTo('createContainer').flatMap((c) => (c.args[1] as ContainerConfig).mounts);
    assert.ok(mounts.length >= 2, 'the containers have mounts (termination log, /etc/hosts)');
    for (const mount of mounts) assert.deepEqual([mount.uidMappings, mount.gidMappings], [userns?.uids, userns?.gids], `${mount.containerPath}: idmapped with the pod's mappings`);
    const file = JSON.parse(await readFile(usernsFilePath(h.root, UID), 'utf8')) as { uidMappings: unknown[] };
    assert.deepEqual(file.uidMappings, [{ hostId, containerId: 0, length: 65536 }]);
  });

  it("sends the host's user namespace (mode NODE) for every other pod, as the kubelet does", async () => {
    await reconcile(basePod());
    const sent = sentUserNamespaces();
    assert.deepEqual([...sent.sandboxes, ...sent.containers].map((u) => u?.mode), ['NODE', 'NODE', 'NODE']);
    assert.ok([...sent.sandboxes, ...sent.containers].every((u) => u?.uids.length === 0 && u.gids.length === 0));
    const mounts = h.runtime.callsTo('createContainer').flatMap((c) => (c.args[1] as ContainerConfig).mounts);
    assert.ok(mounts.every((m) => m.uidMappings === undefined && m.gidMappings === undefined), 'no idmapped mounts');
  });
});
