import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planImageGc, planOldImages, updateImageRecords, usagePercent, type GcImage, type ImageGcInput, type ImageRecord } from './image-gc-plan.js';

const NOW = 10_000_000;
const GB = 1_000_000_000;
const PAUSE = 'registry.k8s.io/pause:3.10';

function image(id: string, o: { size?: number; inUse?: boolean; pinned?: boolean; names?: string[]; firstSeenAgoMs?: number; lastUsedAgoMs?: number } = {}): GcImage {
  const record: ImageRecord = {
    firstSeenMs: NOW - (o.firstSeenAgoMs ?? 3_600_000),
    ...(o.lastUsedAgoMs === undefined ? {} : { lastUsedMs: NOW - o.lastUsedAgoMs }),
  };
  return { id, names: o.names ?? [`example.test/${id}:1`], sizeBytes: o.size ?? GB, pinned: o.pinned ?? false, inUse: o.inUse ?? false, record };
}

function plan(images: GcImage[], fs: { capacityBytes: number; availableBytes: number }, policy: Partial<ImageGcInput['policy']> = {}) {
  const result = planImageGc({ images, fs, policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0, ...policy }, nowMs: NOW, sandboxImage: PAUSE });
  return { ...result, ids: result.remove.map((i) => i.id) };
}

// 100 GB filesystem, 10 GB available: usage 90 %, and 20 GB - 10 GB = 10 GB to free to reach 80 %.
const FULL = { capacityBytes: 100 * GB, availableBytes: 10 * GB };

describe('image GC usage', () => {
  it('computes whole percents as the kubelet does (rounded towards more usage)', () => {
    assert.equal(usagePercent({ capacityBytes: 1000, availableBytes: 151 }), 85);
    assert.equal(usagePercent({ capacityBytes: 1000, availableBytes: 150 }), 85);
    assert.equal(usagePercent({ capacityBytes: 1000, availableBytes: 159 }), 85);
    assert.equal(usagePercent({ capacityBytes: 1000, availableBytes: 160 }), 84);
    assert.equal(usagePercent({ capacityBytes: 1000, availableBytes: 2000 }), 0);
    assert.equal(usagePercent({ capacityBytes: 0, availableBytes: 0 }), 0);
  });
});

describe('planImageGc', () => {
  it('removes nothing below the high threshold', () => {
    const p = plan([image('a')], { capacityBytes: 100 * GB, availableBytes: 16 * GB });
    assert.equal(p.usagePercent, 84);
    assert.equal(p.bytesToFree, 0);
    assert.deepEqual(p.ids, []);
  });

  it('at the high threshold frees down to the low one, least recently used first, and stops when enough is freed', () => {
    const images = [image('used-1m-ago', { lastUsedAgoMs: 60_000, size: 6 * GB }), image('never-used', { size: 6 * GB }), image('used-1h-ago', { lastUsedAgoMs: 3_600_000, size: 6 * GB })];
    const p = plan(images, FULL);
    assert.equal(p.usagePercent, 90);
    assert.equal(p.bytesToFree, 10 * GB);
    assert.deepEqual(p.ids, ['never-used', 'used-1h-ago']);
    assert.equal(p.bytesFreed, 12 * GB);
  });

  it('breaks ties by when an image was first seen', () => {
    const images = [image('seen-later', { firstSeenAgoMs: 200_000, size: 1 }), image('seen-first', { firstSeenAgoMs: 900_000, size: 1 })];
    assert.deepEqual(plan(images, FULL).ids, ['seen-first', 'seen-later']);
  });

  it('never removes images in use, pinned, the sandbox image (by tag or ID) or ones first seen within minAge', () => {
    const images = [
      image('in-use', { inUse: true }),
      image('pinned', { pinned: true }),
      image('pause', { names: [PAUSE] }),
      image(PAUSE),
      image('just-pulled', { firstSeenAgoMs: 60_000 }),
      image('old', { size: 1 }),
    ];
    const p = plan(images, FULL);
    assert.deepEqual(p.ids, ['old']);
    assert.equal(p.bytesFreed, 1);
  });

  it('a minAge of 0 lets a just-seen image go', () => {
    assert.deepEqual(plan([image('just-pulled', { firstSeenAgoMs: 0 })], FULL, { minAgeMs: 0 }).ids, ['just-pulled']);
  });

  it('a high threshold of 100 disables image GC, even on a full filesystem', () => {
    const p = plan([image('a')], { capacityBytes: 100 * GB, availableBytes: 0 }, { highThresholdPercent: 100, lowThresholdPercent: 99 });
    assert.equal(p.usagePercent, 100);
    assert.deepEqual(p.ids, []);
  });
});

describe('updateImageRecords', () => {
  it('first sees a new image now, marks images in use as used now, keeps the rest, forgets images no longer listed', () => {
    const before = new Map<string, ImageRecord>([
      ['kept', { firstSeenMs: 1, lastUsedMs: 5 }],
      ['now-used', { firstSeenMs: 2 }],
      ['gone', { firstSeenMs: 3 }],
    ]);
    const after = updateImageRecords(before, [{ id: 'kept', inUse: false }, { id: 'now-used', inUse: true }, { id: 'new', inUse: false }], 100);
    assert.deepEqual([...after.entries()], [
      ['kept', { firstSeenMs: 1, lastUsedMs: 5 }],
      ['now-used', { firstSeenMs: 2, lastUsedMs: 100 }],
      ['new', { firstSeenMs: 100 }],
    ]);
  });
});

describe('planOldImages (imageMaximumGCAge)', () => {
  const MINUTE = 60_000;
  /** Started an hour ago, maximum age one minute, unless said otherwise. */
  const old = (images: GcImage[], o: { maxAgeMs?: number; startedAgoMs?: number; nowMs?: number } = {}): string[] =>
    planOldImages({ images, maxAgeMs: o.maxAgeMs ?? MINUTE, nowMs: o.nowMs ?? NOW, startedMs: NOW - (o.startedAgoMs ?? 3_600_000), sandboxImage: PAUSE }).map((i) => i.id);

  it('removes an unused image last used more than the maximum age ago, not one used exactly that long ago (the kubelet’s TestGarbageCollectImageTooOld)', () => {
    assert.deepEqual(old([image('used-at-max-age', { lastUsedAgoMs: MINUTE }), image('used-just-before', { lastUsedAgoMs: MINUTE + 1 }), image('used-now', { lastUsedAgoMs: 0 })]), ['used-just-before']);
  });

  it('counts an image never seen in use as unused since ever, whatever its minimum age and when it was first seen', () => {
    assert.deepEqual(old([image('never-used', { firstSeenAgoMs: 1000 })]), ['never-used']);
  });

  it('removes nothing until the collector has run longer than the maximum age (its records start then)', () => {
    const images = [image('never-used'), image('used-long-ago', { lastUsedAgoMs: 3_000_000 })];
    assert.deepEqual(old(images, { startedAgoMs: MINUTE }), []);
    assert.deepEqual(old(images, { startedAgoMs: MINUTE + 1 }), ['never-used', 'used-long-ago']);
  });

  it('a maximum age of 0 turns it off, however much time has passed (the kubelet’s TestGarbageCollectImageMaxAgeDisabled)', () => {
    assert.deepEqual(old([image('never-used'), image('used-long-ago', { lastUsedAgoMs: 3_000_000 })], { maxAgeMs: 0, nowMs: Number.MAX_SAFE_INTEGER }), []);
  });

  it('never removes an image in use, pinned, or the sandbox image (by tag or ID)', () => {
    const images = [image('in-use', { inUse: true }), image('pinned', { pinned: true }), image('pause', { names: [PAUSE] }), image(PAUSE), image('unused')];
    assert.deepEqual(old(images), ['unused']);
  });
});
