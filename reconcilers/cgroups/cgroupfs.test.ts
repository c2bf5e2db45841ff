import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { V1CgroupFs, type CgroupHierarchy } from './cgroupfs.js';

/** Two hierarchies mounted on plain directories: only the existence checks are exercised (no settings written). */
describe('V1CgroupFs existence checks', () => {
  let root = '';
  let hierarchies: CgroupHierarchy[] = [];

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-cgroupfs-'));
    hierarchies = [
      { subsystems: ['cpu', 'cpuacct'], mountpoint: path.join(root, 'cpu,cpuacct') },
      { subsystems: ['memory'], mountpoint: path.join(root, 'memory') },
    ];
    for (const h of hierarchies) await mkdir(h.mountpoint);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('tells a cgroup in every hierarchy, in some, and in none apart', async () => {
    const fs = new V1CgroupFs(hierarchies);
    const name = '/kubepods/burstable/poda';
    assert.equal(await fs.exists(name), false);
    assert.equal(await fs.existsAnywhere(name), false);
    await mkdir(path.join(hierarchies[1]!.mountpoint, name), { recursive: true });
    assert.equal(await fs.exists(name), false, 'missing from the cpu hierarchy');
    assert.equal(await fs.existsAnywhere(name), true, 'a half-removed cgroup still has something to remove');
    await mkdir(path.join(hierarchies[0]!.mountpoint, name), { recursive: true });
    assert.equal(await fs.exists(name), true);
    assert.equal(await fs.existsAnywhere(name), true);
  });

  it('rejects, not answers false, when a hierarchy cannot be looked into', async () => {
    // A mountpoint that is a file: looking under it fails with ENOTDIR, which is no answer about the cgroup.
    await rm(hierarchies[0]!.mountpoint, { recursive: true });
    await writeFile(hierarchies[0]!.mountpoint, '');
    const fs = new V1CgroupFs(hierarchies);
    await assert.rejects(fs.existsAnywhere('/kubepods'), { code: 'ENOTDIR' });
    await assert.rejects(fs.exists('/kubepods'), { code: 'ENOTDIR' });
  });
});
