import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { IDS_PER_POD, nodeIdRange, type NodeIdRange } from './id-range.js';
import { HOST_USER_NAMESPACE, UserNamespaceError, UserNamespaceManager } from './userns-manager.js';
import { usernsFilePath } from './userns-file.js';

let root = '';
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-userns-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Four pod ranges from 131072. */
const FOUR: NodeIdRange = nodeIdRange({ firstId: 131072, length: 4 * IDS_PER_POD }, { idsPerPod: IDS_PER_POD, maxPods: 4 });

const podWith = (uid: string, hostUsers: boolean | undefined) => basePod((p) => {
  p.metadata!.uid = uid;
  if (hostUsers !== undefined) p.spec!.hostUsers = hostUsers;
});

/** A manager over FOUR, or with user namespaces off. */
function manager(random: () => number = () => 0, range: NodeIdRange | 'off' = FOUR): UserNamespaceManager {
  if (range === 'off') return new UserNamespaceManager({ rootDir: root, range: undefined, random, offReason: 'no host IDs are configured for pods (--user-namespaces-host-ids)' });
  return new UserNamespaceManager({ rootDir: root, range, random });
}

async function hostIdOf(m: UserNamespaceManager, uid: string): Promise<number> {
  const userns = await m.userNamespaceFor(podWith(uid, false), '', 'supported');
  assert.equal(userns.mode, 'POD');
  assert.deepEqual(userns.uids, userns.gids, 'GIDs mapped as UIDs');
  assert.equal(userns.uids.length, 1);
  assert.equal(userns.uids[0]?.containerId, 0, 'root inside is mapped');
  assert.equal(userns.uids[0]?.length, IDS_PER_POD);
  return userns.uids[0]?.hostId ?? -1;
}

describe("the pods' user namespaces", () => {
  it("gives pods that do not ask for one the host's (mode NODE), with nothing written", async () => {
    const m = manager();
    assert.deepEqual(await m.userNamespaceFor(podWith('a', undefined), '', 'supported'), HOST_USER_NAMESPACE);
    assert.deepEqual(await m.userNamespaceFor(podWith('b', true), '', 'unsupported'), HOST_USER_NAMESPACE);
    assert.equal(m.allocated(), 0);
  });

  it('gives each hostUsers false pod its own range from a random free slot, and the same one on every later sync', async () => {
    // The random start lands on slot 2, then on 2 again (taken): the scan moves on to 3.
    const m = manager(() => 0.5);
    const a = await hostIdOf(m, 'a');
    assert.equal(a, 131072 + 2 * IDS_PER_POD);
    const b = await hostIdOf(m, 'b');
    assert.equal(b, 131072 + 3 * IDS_PER_POD);
    assert.equal(await hostIdOf(m, 'a'), a, 'the same range again');
    assert.equal(m.allocated(), 2);
  });

  it("keeps the range in the pod directory's userns file in the kubelet's format", async () => {
    const m = manager();
    const a = await hostIdOf(m, 'a');
    const file = JSON.parse(await readFile(usernsFilePath(root, 'a'), 'utf8')) as unknown;
    assert.deepEqual(file, { uidMappings: [{ hostId: a, containerId: 0, length: 65536 }], gidMappings: [{ hostId: a, containerId: 0, length: 65536 }] });
  });

  it('after a restart, reads every range back before handing out a new one, and never gives a held range again', async () => {
    const first = manager(() => 0);
    const a = await hostIdOf(first, 'a');
    const b = await hostIdOf(first, 'b');
    const restarted = manager(() => 0);
    assert.equal(await restarted.loadFromDisk(), 2);
    const c = await hostIdOf(restarted, 'c');
    assert.deepEqual(new Set([a, b, c]).size, 3, 'three distinct ranges');
    assert.equal(await hostIdOf(restarted, 'a'), a);
  });

  it('frees a forgotten pod’s range for the next pod', async () => {
    const m = manager(() => 0);
    const a = await hostIdOf(m, 'a');
    m.podForgotten({ uid: 'a', namespace: 'default', name: 'web' });
    assert.equal(m.allocated(), 0);
    await rm(path.join(root, 'pods', 'a'), { recursive: true });
    assert.equal(await hostIdOf(m, 'b'), a, 'the freed slot is the first free one again');
  });

  it('refuses a fifth pod when the four ranges are held', async () => {
    const m = manager();
    for (const uid of ['a', 'b', 'c', 'd']) await hostIdOf(m, uid);
    await assert.rejects(m.userNamespaceFor(podWith('e', false), '', 'supported'), (e: unknown) => e instanceof UserNamespaceError && e.message.includes('could not find an empty slot'));
  });

  it("refuses with the kubelet's messages when the handler cannot, and says why when the node gives no IDs", async () => {
    const m = manager();
    await assert.rejects(m.userNamespaceFor(podWith('a', false), '', 'unsupported'), { message: "can't set `spec.hostUsers: false`, runtime does not support user namespaces" });
    await assert.rejects(m.userNamespaceFor(podWith('a', false), 'kata', 'unknown'), { message: 'can\'t set `spec.hostUsers: false`, RuntimeClass handler "kata" does not support user namespaces: the handler "kata" is not known' });
    await assert.rejects(manager(() => 0, 'off').userNamespaceFor(podWith('a', false), '', 'supported'), { message: "can't set `spec.hostUsers: false`: no host IDs are configured for pods (--user-namespaces-host-ids)" });
    assert.equal(m.allocated(), 0);
  });

  it('refuses at load a file it cannot have written: another length, outside the range, two pods on one range, root unmapped', async () => {
    const write = async (uid: string, content: object): Promise<void> => {
      await mkdir(path.join(root, 'pods', uid), { recursive: true });
      await writeFile(usernsFilePath(root, uid), JSON.stringify(content));
    };
    const mapping = (hostId: number, length = 65536, containerId = 0) => ({ uidMappings: [{ hostId, containerId, length }], gidMappings: [{ hostId, containerId, length }] });
    const cases: [object[], RegExp][] = [
      [[mapping(131072, 1000)], /is not one of this node's/],
      [[mapping(65536)], /is not one of this node's/],
      [[mapping(131072), mapping(131072)], /already taken/],
      [[mapping(131072, 65536, 1)], /UID 0 must be mapped/],
      [[{ uidMappings: [{ hostId: 131072, containerId: 0, length: 65536 }], gidMappings: [{ hostId: 196608, containerId: 0, length: 65536 }] }], /GID and UID mapping should be identical/],
    ];
    for (const [files, expected] of cases) {
      await rm(path.join(root, 'pods'), { recursive: true, force: true });
      for (const [i, content] of files.entries()) await write(`p${i}`, content);
      await assert.rejects(manager().loadFromDisk(), expected);
    }
  });
});
