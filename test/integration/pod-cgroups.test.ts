/**
 * The pod cgroup manager on the host's real cgroup v1 hierarchies, under a scratch root
 * (`--cgroup-root=/nodelet-it-<pid>`, removed afterwards): the files the kernel shows for the QoS
 * cgroups and a pod cgroup, a process placed in a container cgroup under the pod killed by the
 * removal, and the directories gone from every hierarchy. Needs root and cgroup v1; skipped
 * otherwise. Does not touch the test cluster.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { hostCgroupHierarchies, V1CgroupFs, type CgroupHierarchy } from '../../reconcilers/cgroups/cgroupfs.js';
import { PodCgroupManager } from '../../reconcilers/cgroups/pod-cgroups.js';
import { systemClock } from '../../util/clock.js';

const ROOT = `/nodelet-it-${process.pid}`;
const UID = 'it-0000-1111';
const MI = 2 ** 20;

const pod: V1Pod = {
  metadata: { name: 'it', namespace: 'default', uid: UID },
  spec: {
    overhead: { cpu: '100m', memory: '16Mi' },
    containers: [{ name: 'a', image: 'i', resources: { requests: { cpu: '200m', memory: '8Mi' }, limits: { cpu: '400m', memory: '64Mi' } } }],
  },
};

async function present(p: string): Promise<boolean> {
  return access(p).then(() => true, () => false);
}

function mountOf(hierarchies: readonly CgroupHierarchy[], subsystem: string): string {
  const found = hierarchies.find((h) => h.subsystems.includes(subsystem));
  assert.ok(found, `no ${subsystem} hierarchy`);
  return found.mountpoint;
}

async function read(hierarchies: readonly CgroupHierarchy[], subsystem: string, file: string): Promise<string> {
  return (await readFile(path.join(mountOf(hierarchies, subsystem), file), 'utf8')).trim();
}

const usable = process.getuid?.() === 0 && (await hostCgroupHierarchies().catch(() => [])).some((h) => h.subsystems.includes('memory'));

describe('pod cgroups on the host (cgroup v1, scratch root)', { skip: usable ? false : 'needs root and cgroup v1' }, () => {
  let hierarchies: CgroupHierarchy[] = [];
  let fs: V1CgroupFs;
  let manager: PodCgroupManager;

  before(async () => {
    hierarchies = await hostCgroupHierarchies();
    fs = new V1CgroupFs(hierarchies);
    manager = new PodCgroupManager({
      fs,
      cgroupRoot: ROOT,
      policy: { enforceCpuLimits: true, cpuPeriodUs: 100_000, podPidsLimit: 64 },
      allocatable: () => ({ milliCpu: 1500, memoryBytes: 1024 * MI }),
      activePods: () => [pod],
      // Ref'd timers: nothing else holds this test's event loop open during a kill round.
      clock: { ...systemClock, setTimeout: (fn, ms) => setTimeout(fn, ms) },
      logger: pino({ level: 'silent' }),
    });
  });

  after(async () => {
    await fs.destroy(ROOT);
  });

  it('writes the QoS and pod settings the kernel then shows, in every hierarchy', async () => {
    await manager.start();
    const name = await manager.ensurePod(pod);
    assert.equal(name, `${ROOT}/kubepods/burstable/pod${UID}`);
    console.log(`hierarchies: ${hierarchies.map((h) => h.subsystems.join(',')).join(' ')}`);
    for (const h of hierarchies) assert.ok(await present(path.join(h.mountpoint, name)), `${name} in ${h.mountpoint}`);
    assert.equal(await read(hierarchies, 'cpu', `${ROOT}/kubepods/cpu.shares`), '1536');
    assert.equal(await read(hierarchies, 'memory', `${ROOT}/kubepods/memory.limit_in_bytes`), String(1024 * MI));
    assert.equal(await read(hierarchies, 'cpu', `${ROOT}/kubepods/besteffort/cpu.shares`), '2');
    // 200m + 100m overhead requested.
    assert.equal(await read(hierarchies, 'cpu', `${ROOT}/kubepods/burstable/cpu.shares`), '307');
    assert.equal(await read(hierarchies, 'cpu', `${name}/cpu.shares`), '307');
    assert.equal(await read(hierarchies, 'cpu', `${name}/cpu.cfs_quota_us`), '50000');
    assert.equal(await read(hierarchies, 'cpu', `${name}/cpu.cfs_period_us`), '100000');
    assert.equal(await read(hierarchies, 'memory', `${name}/memory.limit_in_bytes`), String(80 * MI));
    assert.equal(await read(hierarchies, 'pids', `${name}/pids.max`), '64');
    assert.notEqual(await read(hierarchies, 'cpuset', `${name}/cpuset.cpus`), '');
  });

  it('removes the pod cgroup from every hierarchy, killing a process left in a container cgroup under it', async () => {
    const name = await manager.ensurePod(pod);
    await fs.create(`${name}/ctr`, {});
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => { resolve(signal); }));
    const pid = child.pid ?? 0;
    for (const h of hierarchies) await writeFile(path.join(h.mountpoint, name, 'ctr', 'cgroup.procs'), String(pid));
    assert.deepEqual(await fs.pids(name), [pid]);
    assert.equal(await manager.removePod(UID), true);
    assert.equal(await exited, 'SIGKILL');
    for (const h of hierarchies) assert.equal(await present(path.join(h.mountpoint, name)), false, `${name} left in ${h.mountpoint}`);
    assert.deepEqual(await manager.podCgroups(), new Map());
  });
});
