import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IDS_PER_POD, UserNamespaceRangeError, defaultHostIds, nodeIdRange, parseGetSubIds, rangeOfSlot, slotOfRange, subordinateIdsOf, type SubordinateIdSource } from './id-range.js';

describe("the node's user-namespace IDs", () => {
  it("defaults to the kubelet's: every ID from 65536 up, 65535 pod ranges, the first at 65536", () => {
    const hostIds = defaultHostIds(IDS_PER_POD);
    assert.deepEqual(hostIds, { firstId: 65536, length: 4294967296 - 65536 });
    const range = nodeIdRange(hostIds, { idsPerPod: IDS_PER_POD, maxPods: 110 });
    assert.deepEqual(range, { idsPerPod: 65536, firstSlot: 1, slots: 65535 });
    assert.deepEqual(rangeOfSlot(range, 0), { hostId: 65536, length: 65536 });
    assert.deepEqual(rangeOfSlot(range, 65534), { hostId: 4294901760, length: 65536 });
  });

  it('maps a pod range back to its slot, and refuses ranges that are not the node’s', () => {
    const range = nodeIdRange({ firstId: 131072, length: 65536 * 4 }, { idsPerPod: IDS_PER_POD, maxPods: 4 });
    assert.equal(slotOfRange(range, { hostId: 131072, length: 65536 }), 0);
    assert.equal(slotOfRange(range, { hostId: 131072 + 3 * 65536, length: 65536 }), 3);
    assert.equal(slotOfRange(range, { hostId: 131072 + 4 * 65536, length: 65536 }), undefined, 'past the end');
    assert.equal(slotOfRange(range, { hostId: 65536, length: 65536 }), undefined, 'before the start');
    assert.equal(slotOfRange(range, { hostId: 131073, length: 65536 }), undefined, 'unaligned');
    assert.equal(slotOfRange(range, { hostId: 131072, length: 1000 }), undefined, 'another length');
  });

  it("refuses what the kubelet refuses: unaligned, mapping 0, too few for maxPods, a length that is not a multiple of 65536", () => {
    const refused = (hostIds: { firstId: number; length: number }, idsPerPod: number, maxPods: number): string => {
      try {
        nodeIdRange(hostIds, { idsPerPod, maxPods });
        return 'accepted';
      } catch (error) {
        assert.ok(error instanceof UserNamespaceRangeError);
        return error.message;
      }
    };
    assert.equal(refused({ firstId: 100000, length: 65536 * 110 }, IDS_PER_POD, 110), 'kubelet user assigned ID 100000 is not a multiple of 65536');
    assert.equal(refused({ firstId: 0, length: 65536 * 110 }, IDS_PER_POD, 110), 'kubelet user assigned ID 0 must be greater or equal to 65536');
    assert.equal(refused({ firstId: 65536, length: 65536 * 109 }, IDS_PER_POD, 110), 'kubelet user assigned IDs are not enough to support 110 pods');
    assert.equal(refused({ firstId: 65536, length: 65536 * 110 + 1 }, IDS_PER_POD, 110), 'kubelet user assigned IDs length 7208961 is not a multiple of 65536');
    assert.equal(refused({ firstId: 65536, length: 65536 * 110 }, 1000, 110), 'kubelet user namespace length 1000 is not a multiple of 65536');
    assert.equal(refused({ firstId: 65536, length: 65536 * 110 }, IDS_PER_POD, 110), 'accepted');
  });

  it('parses getsubids: one line of four fields', () => {
    assert.deepEqual(parseGetSubIds('0: kubelet 65536 2147483648\n'), { firstId: 65536, length: 2147483648 });
    assert.throws(() => parseGetSubIds('0: kubelet 65536 7208960\n1: kubelet 9999 1\n'), /it must contain only one line/);
    assert.throws(() => parseGetSubIds('0: kubelet 65536\n'), /invalid line/);
    assert.throws(() => parseGetSubIds('0: kubelet x 65536\n'), /invalid line/);
  });

  it("takes the user's subordinate IDs when the user and getsubids exist; refuses UIDs and GIDs that differ; else the default", async () => {
    const source = (users: string[], uids: string | undefined, gids: string | undefined): SubordinateIdSource => ({
      userExists: (user) => Promise.resolve(users.includes(user)),
      getSubIds: (_user, groups) => Promise.resolve(groups ? gids : uids),
    });
    const line = '0: nodelet 196608 7208960\n';
    assert.deepEqual(await subordinateIdsOf('nodelet', source(['nodelet'], line, line), IDS_PER_POD), { firstId: 196608, length: 7208960 });
    assert.deepEqual(await subordinateIdsOf('nodelet', source([], line, line), IDS_PER_POD), defaultHostIds(IDS_PER_POD), 'no such user');
    assert.deepEqual(await subordinateIdsOf('nodelet', source(['nodelet'], undefined, undefined), IDS_PER_POD), defaultHostIds(IDS_PER_POD), 'no getsubids');
    await assert.rejects(subordinateIdsOf('nodelet', source(['nodelet'], line, '0: nodelet 262144 7208960\n'), IDS_PER_POD), /mismatched subuids and subgids for user "nodelet"/);
  });
});
