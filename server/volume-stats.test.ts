import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildSummary, type SummaryInput } from './summary.js';
import { measureDir } from '../util/dir-usage.js';
import { measurePodVolumes, PodVolumeStats } from './volume-stats.js';

const fs = { capacityBytes: 10_000_000, availableBytes: 4_000_000, usedBytes: 6_000_000, inodes: 500, inodesFree: 200, inodesUsed: 300 };

describe('volume and log figures of the summary', () => {
  let root = '';
  const uid = 'uid-1';
  const volumes = (): string => path.join(root, 'pods', uid, 'volumes');

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'nodelet-volstats-'));
    await mkdir(path.join(volumes(), 'kubernetes.io~empty-dir', 'cache', 'sub'), { recursive: true });
    await writeFile(path.join(volumes(), 'kubernetes.io~empty-dir', 'cache', 'sub', 'big'), Buffer.alloc(1024 * 1024, 1));
    await writeFile(path.join(volumes(), 'kubernetes.io~empty-dir', 'cache', 'small'), 'x');
    await mkdir(path.join(volumes(), 'kubernetes.io~configmap', 'config'), { recursive: true });
    await writeFile(path.join(volumes(), 'kubernetes.io~configmap', 'config', 'key'), 'value');
    // A link out of the volume is counted as a link, never followed.
    await symlink('/etc', path.join(volumes(), 'kubernetes.io~configmap', 'config', 'etc'));
    // A directory nodelet does not write (another plugin's): not reported.
    await mkdir(path.join(volumes(), 'kubernetes.io~csi', 'data'), { recursive: true });
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('measures a directory as du does: allocated blocks and inodes of everything under it, links not followed', async () => {
    const cache = await measureDir(path.join(volumes(), 'kubernetes.io~empty-dir', 'cache'));
    assert.ok(cache.usedBytes >= 1024 * 1024, `at least the 1 MiB file, got ${cache.usedBytes}`);
    assert.ok(cache.usedBytes < 1024 * 1024 + 64 * 1024, `not much more than it, got ${cache.usedBytes}`);
    assert.equal(cache.inodesUsed, 4, 'cache, sub, big, small');
    const config = await measureDir(path.join(volumes(), 'kubernetes.io~configmap', 'config'));
    assert.equal(config.inodesUsed, 3, 'config, key, the link itself');
    assert.ok(config.usedBytes < 64 * 1024, 'the link to /etc was not followed');
    assert.deepEqual(await measureDir(path.join(root, 'absent')), { usedBytes: 0, inodesUsed: 0 });
    assert.equal((await measureDir(path.join(volumes(), 'kubernetes.io~empty-dir', 'cache'), 2)).inodesUsed, 2, 'a walk stops at its bound');
  });

  it("lists the pod's volumes nodelet writes, each with its filesystem's figures", async () => {
    const measured = await measurePodVolumes(root, uid, () => Promise.resolve(fs));
    assert.deepEqual(measured.map((v) => [v.name, v.inodesUsed]), [['cache', 4], ['config', 3]]);
    assert.deepEqual(await measurePodVolumes(root, 'other-uid', () => Promise.resolve(fs)), []);
  });

  it('measures a pod at most once a period, and forgets pods that are gone', async () => {
    let reads = 0;
    const stats = new PodVolumeStats(root, () => { reads += 1; return Promise.resolve(fs); }, 60_000);
    await stats.of(uid, 0);
    await stats.of(uid, 59_999);
    assert.equal(reads, 2, 'two volumes read once');
    await stats.of(uid, 60_000);
    assert.equal(reads, 4, 'measured again after the period');
    stats.keepOnly(new Set());
    await stats.of(uid, 60_001);
    assert.equal(reads, 6, 'a forgotten pod is measured again');
  });

  it("reports volumes, logs and the pod's ephemeral storage as the kubelet's summary does", async () => {
    const measured = await measurePodVolumes(root, uid, () => Promise.resolve(fs));
    const input: SummaryInput = {
      nodeName: 'n',
      now: 1_900_000_000_000_000_000n,
      node: { memory: { capacityBytes: 10n, usageBytes: 1n, workingSetBytes: 1n }, usageCoreNanoSeconds: 1n, bootTimeSeconds: 1, rlimit: {}, swap: { usageBytes: 0n, availableBytes: 0n } },
      nodeNanoCores: undefined,
      rootFs: fs,
      imageFs: undefined,
      sandboxes: [{ id: 's1', state: 'SANDBOX_READY', createdAt: 1n, metadata: { name: 'p', namespace: 'ns', uid, attempt: 0 }, labels: {}, annotations: {} }],
      containers: [{ sandboxId: 's1', name: 'app', createdAt: 1n, nanoCores: undefined, stats: { id: 'c1', writableLayer: { timestamp: 1n, usedBytes: 4096n, inodesUsed: 2n } } }],
      storage: new Map([[uid, { volumes: measured, logs: new Map([['app', { usage: { usedBytes: 8192, inodesUsed: 3 }, fs }]]) }]]),
    } as unknown as SummaryInput;
    const [pod] = buildSummary(input).pods;
    assert.deepEqual(pod?.volume?.map((v) => v.name), ['cache', 'config']);
    const cache = pod?.volume?.[0];
    assert.equal(cache?.capacityBytes, fs.capacityBytes);
    assert.equal(cache?.availableBytes, fs.availableBytes);
    assert.equal(cache?.usedBytes, measured[0]?.usedBytes);
    assert.deepEqual(pod?.containers[0]?.logs, { time: pod?.containers[0]?.logs?.time, capacityBytes: fs.capacityBytes, availableBytes: fs.availableBytes, inodes: fs.inodes, inodesFree: fs.inodesFree, usedBytes: 8192, inodesUsed: 3 });
    const volumeBytes = measured.reduce((t, v) => t + v.usedBytes, 0);
    assert.equal(pod?.['ephemeral-storage']?.usedBytes, 4096 + 8192 + volumeBytes, 'writable layer + logs + volumes');
    assert.equal(pod?.['ephemeral-storage']?.inodesUsed, 2 + 3 + 7);
  });
});
