import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createNodeMetrics } from '../../server/node-metrics.js';
import { systemClock } from '../../util/clock.js';
import { hostCgroupVersion } from './node-metrics.js';

describe('the node registry’s host facts', () => {
  it('reports the cgroup version the mount table shows (v1 on a hybrid host, as the kubelet), none when unknown', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-mountinfo-'));
    try {
      const v1 = '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu';
      const unified = '35 31 0:32 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw';
      const write = async (name: string, text: string): Promise<string> => {
        await writeFile(path.join(dir, name), `${text}\n`);
        return path.join(dir, name);
      };
      assert.equal(await hostCgroupVersion(await write('v1', v1)), 1);
      assert.equal(await hostCgroupVersion(await write('v2', unified)), 2);
      assert.equal(await hostCgroupVersion(await write('none', '1 0 8:1 / / rw - ext4 /dev/sda1 rw')), undefined);
      assert.equal(await hostCgroupVersion(path.join(dir, 'absent')), undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const text = await createNodeMetrics({ nodeName: 'n', clock: systemClock, cgroupVersion: 2 }).expose();
    assert.match(text, /^kubelet_cgroup_version 2$/m);
    assert.doesNotMatch(await createNodeMetrics({ nodeName: 'n', clock: systemClock }).expose(), /kubelet_cgroup_version/);
  });
});
