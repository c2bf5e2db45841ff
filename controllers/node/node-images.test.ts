/** The Node's `images` as the kubelet's setter writes them, and the 30 s listing cache. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Image } from '../../cri/types.js';
import { CachedImageList, IMAGE_LIST_PERIOD_MS, nodeImagesOf, sameNodeImages } from './node-images.js';
import { buildNodeStatus } from './node-status.js';
import type { HostFacts } from './host-info.js';
import type { Clock } from '../../util/clock.js';

const image = (id: string, size: number, tags: string[] = [], digests: string[] = []): Image => ({ id, size: BigInt(size), repoTags: tags, repoDigests: digests });

describe('node images', () => {
  it('largest first, digests before tags, at most five names each', () => {
    const tags = ['r/big:1', 'r/big:2', 'r/big:3', 'r/big:4'];
    const listed = [image('small', 10, ['r/small:1']), image('big', 3000, tags, ['r/big@sha256:aa', 'r/big@sha256:bb']), image('mid', 200, [], ['r/mid@sha256:cc'])];
    assert.deepEqual(nodeImagesOf(listed), [
      { names: ['r/big@sha256:aa', 'r/big@sha256:bb', 'r/big:1', 'r/big:2', 'r/big:3'], sizeBytes: 3000 },
      { names: ['r/mid@sha256:cc'], sizeBytes: 200 },
      { names: ['r/small:1'], sizeBytes: 10 },
    ]);
  });

  it('keeps the largest nodeStatusMaxImages (50 by default; below 0: all)', () => {
    const many = Array.from({ length: 60 }, (_, i) => image(`i${i}`, i + 1, [`r/i:${i}`]));
    const reported = nodeImagesOf(many);
    assert.equal(reported.length, 50);
    assert.equal(reported[0]?.sizeBytes, 60);
    assert.equal(reported[49]?.sizeBytes, 11);
    assert.equal(nodeImagesOf(many, 2).length, 2);
    assert.equal(nodeImagesOf(many, -1).length, 60);
  });

  it('compares lists as the API server returns them (a zero size left out)', () => {
    assert.ok(sameNodeImages([{ names: ['a'], sizeBytes: 0 }], [{ names: ['a'] }]));
    assert.ok(!sameNodeImages([{ names: ['a'], sizeBytes: 1 }], [{ names: ['b'], sizeBytes: 1 }]));
    assert.ok(!sameNodeImages([], [{ names: ['a'] }]));
  });

  it('the status carries images only when they changed since the posted status', () => {
    const facts: HostFacts = { cpuCount: 2, memoryBytes: 1024, ephemeralStorageBytes: 1024, machineId: 'm', systemUuid: 'm', bootId: 'b', kernelVersion: 'k', osImage: 'o', architecture: 'amd64', hostname: 'h', runningInUserNamespace: false };
    const base = { runtimeVersion: 'containerd://2.4.2', agentVersion: 'v', nodeIp: '10.0.0.1', readiness: { ready: true, reason: '', message: '' }, now: new Date(0) };
    const images = [{ names: ['r/a:1'], sizeBytes: 5 }];
    assert.deepEqual(buildNodeStatus(facts, { ...base, images }).images, images);
    assert.equal(buildNodeStatus(facts, { ...base, images, previous: { images } }).images, undefined);
    assert.deepEqual(buildNodeStatus(facts, { ...base, images: [], previous: { images } }).images, [], 'every image removed: an empty list is sent');
    assert.equal(buildNodeStatus(facts, base).images, undefined, 'no listing: the images are left as they are');
  });

  it('lists the runtime once per 30 s', async () => {
    let now = 0;
    let calls = 0;
    const clock = { now: () => now } as Pick<Clock, 'now'> as Clock;
    const cache = new CachedImageList({ listImages: () => Promise.resolve((calls++, [image('a', 1)])) }, clock);
    await cache.images();
    now += IMAGE_LIST_PERIOD_MS - 1;
    await cache.images();
    assert.equal(calls, 1);
    now += 1;
    await cache.images();
    assert.equal(calls, 2);
  });
});
