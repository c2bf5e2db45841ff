/**
 * cgroup v2 on a tree laid out on a temporary directory with the kernel's file names and formats
 * (the root's `cgroup.controllers`, `cgroup.subtree_control`, `cpu.max`, …), as the kubelet's own
 * unit tests do: this machine is cgroup v1. What the kernel does by itself (control files appearing
 * on mkdir, rmdir of a directory holding them) is not there, so the tests only read what the code
 * wrote and remove plain directories. Also the pod cgroup manager on that tree, and the choice of
 * v1 or v2 from a mount table.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { cpuSharesToWeight, cpuWeightToShares, hostV2Controllers, UNLIMITED_MEMORY_BYTES, V2CgroupFs } from './cgroupfs-v2.js';
import { cgroupLayout } from './host-cgroupfs.js';
import { PodCgroupManager } from './pod-cgroups.js';

/** A cgroup2 root offering what a typical kernel does. */
const ROOT_CONTROLLERS = 'cpuset cpu io memory hugetlb pids rdma misc\n';

describe('cpu.shares → cpu.weight', () => {
  it("matches libcontainer's ConvertCPUSharesToCgroupV2Value (opencontainers/cgroups v0.0.6, the kubelet's)", () => {
    // Printed by that Go function for these shares.
    const reference: [number, number][] = [[0, 0], [2, 1], [3, 2], [10, 4], [102, 17], [512, 59], [1024, 100], [2048, 174], [10000, 627], [262143, 10000], [262144, 10000]];
    assert.deepEqual(reference.map(([shares]) => [shares, cpuSharesToWeight(shares)]), reference);
  });

  it('reads a weight back as the smallest shares written as that weight', () => {
    for (const shares of [2, 3, 102, 1024, 1025, 2048, 262144]) {
      const weight = cpuSharesToWeight(shares);
      const back = cpuWeightToShares(weight);
      assert.equal(cpuSharesToWeight(back), weight, `shares ${shares}`);
      assert.ok(back <= shares && (back === 2 || cpuSharesToWeight(back - 1) < weight), `shares ${shares} → ${back}`);
    }
  });
});

describe('V2CgroupFs on a laid-out cgroup2 tree', () => {
  let root = '';
  const file = async (...parts: string[]): Promise<string> => (await readFile(path.join(root, ...parts), 'utf8')).trim();

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-cgroup2-'));
    await writeFile(path.join(root, 'cgroup.controllers'), ROOT_CONTROLLERS);
    await writeFile(path.join(root, 'cgroup.subtree_control'), 'memory pids\n');
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("enables the kubelet's controllers top down and writes the pod's settings in v2's files", async () => {
    const controllers = hostV2Controllers(root);
    assert.deepEqual(controllers, ['cpu', 'cpuset', 'memory', 'hugetlb', 'pids']);
    const fs = new V2CgroupFs(root, controllers);
    await fs.create('/kubepods/burstable/poda', { cpuShares: 1024, cpuPeriodUs: 100_000, cpuQuotaUs: 50_000, memoryLimitBytes: 128 * 2 ** 20, pidsLimit: 100 });
    // The root had memory and pids already: only the rest is added there.
    assert.equal(await file('cgroup.subtree_control'), '+cpu +cpuset +hugetlb');
    assert.equal(await file('kubepods', 'cgroup.subtree_control'), '+cpu +cpuset +memory +hugetlb +pids');
    assert.equal(await file('kubepods', 'burstable', 'cgroup.subtree_control'), '+cpu +cpuset +memory +hugetlb +pids');
    const pod = ['kubepods', 'burstable', 'poda'];
    assert.deepEqual(
      [await file(...pod, 'cpu.weight'), await file(...pod, 'cpu.max'), await file(...pod, 'memory.max'), await file(...pod, 'pids.max')],
      ['100', '50000 100000', '134217728', '100'],
    );
    assert.deepEqual(await fs.read('/kubepods/burstable/poda'), { cpuShares: cpuWeightToShares(100), cpuQuotaUs: 50_000, cpuPeriodUs: 100_000, memoryLimitBytes: 134_217_728 });
  });

  it('writes unlimited as max and reads max back as unlimited; a quota alone keeps the period', async () => {
    const fs = new V2CgroupFs(root, ['cpu', 'memory', 'pids']);
    await fs.create('/kubepods', { cpuShares: 2, cpuPeriodUs: 100_000, cpuQuotaUs: -1, memoryLimitBytes: -1, pidsLimit: 0 });
    assert.deepEqual([await file('kubepods', 'cpu.max'), await file('kubepods', 'memory.max'), await file('kubepods', 'pids.max')], ['max 100000', 'max', 'max']);
    assert.deepEqual(await fs.read('/kubepods'), { cpuShares: 2, cpuQuotaUs: -1, cpuPeriodUs: 100_000, memoryLimitBytes: UNLIMITED_MEMORY_BYTES });
    await fs.update('/kubepods', { cpuQuotaUs: 20_000 });
    assert.equal(await file('kubepods', 'cpu.max'), '20000');
    // A period alone keeps the quota the kernel holds.
    await writeFile(path.join(root, 'kubepods', 'cpu.max'), '20000 100000\n');
    await fs.update('/kubepods', { cpuPeriodUs: 50_000 });
    assert.equal(await file('kubepods', 'cpu.max'), '20000 50000');
  });

  it('neither enables nor writes a controller the root does not offer', async () => {
    await writeFile(path.join(root, 'cgroup.controllers'), 'cpu memory\n');
    const fs = new V2CgroupFs(root, hostV2Controllers(root));
    await fs.create('/kubepods', { cpuShares: 1024, pidsLimit: 100 });
    assert.equal(await file('kubepods', 'cpu.weight'), '100');
    await assert.rejects(readFile(path.join(root, 'kubepods', 'pids.max')), { code: 'ENOENT' });
    assert.equal(await file('cgroup.subtree_control'), '+cpu');
  });

  it('lists children and their processes, and removes a tree deepest first', async () => {
    const fs = new V2CgroupFs(root, ['cpu']);
    await mkdir(path.join(root, 'kubepods', 'besteffort', 'podb', 'ctr'), { recursive: true });
    await mkdir(path.join(root, 'kubepods', 'poda'), { recursive: true });
    assert.deepEqual(await fs.children('/kubepods'), ['besteffort', 'poda']);
    assert.equal(await fs.exists('/kubepods/besteffort/podb'), true);
    // Every cgroup has a cgroup.procs (empty where no process is).
    await writeFile(path.join(root, 'kubepods', 'besteffort', 'podb', 'cgroup.procs'), '');
    await writeFile(path.join(root, 'kubepods', 'besteffort', 'podb', 'ctr', 'cgroup.procs'), '41\n42\n');
    assert.deepEqual(await fs.pids('/kubepods/besteffort/podb'), [41, 42]);
    for (const dir of ['podb/ctr', 'podb']) await rm(path.join(root, 'kubepods', 'besteffort', dir, 'cgroup.procs'));
    await fs.destroy('/kubepods/besteffort/podb');
    assert.equal(await fs.exists('/kubepods/besteffort/podb'), false);
    assert.equal(await fs.existsAnywhere('/kubepods/besteffort'), true);
    await fs.destroy('/kubepods/besteffort/podb');
  });

  it("lays out the kubelet's QoS tree through the pod cgroup manager", async () => {
    const fs = new V2CgroupFs(root, hostV2Controllers(root));
    const pod = basePod((p) => {
      p.metadata!.uid = 'u1';
      p.spec!.containers = [{ ...p.spec!.containers[0]!, resources: { requests: { cpu: '250m' }, limits: { memory: '64Mi' } } }];
    });
    const manager = new PodCgroupManager({
      fs, cgroupRoot: '/', allocatable: () => ({ milliCpu: 2000, memoryBytes: 4096 * 2 ** 20 }), activePods: () => [pod],
      clock: createFakeClock(), logger: pino({ level: 'silent' }),
    });
    await manager.start();
    assert.equal(await manager.ensurePod(pod), '/kubepods/burstable/podu1');
    assert.deepEqual(
      {
        kubepods: [await file('kubepods', 'cpu.weight'), await file('kubepods', 'memory.max')],
        burstable: await file('kubepods', 'burstable', 'cpu.weight'),
        besteffort: await file('kubepods', 'besteffort', 'cpu.weight'),
        pod: [await file('kubepods', 'burstable', 'podu1', 'cpu.weight'), await file('kubepods', 'burstable', 'podu1', 'memory.max')],
      },
      {
        // 2000m allocatable → 2048 shares; 250m → 256 shares; BestEffort 2 shares; 64Mi, the one container's limit.
        kubepods: [String(cpuSharesToWeight(2048)), String(4096 * 2 ** 20)],
        burstable: String(cpuSharesToWeight(256)),
        besteffort: '1',
        pod: [String(cpuSharesToWeight(256)), String(64 * 2 ** 20)],
      },
    );
    // No CPU limit: cpu.max is left at the kernel's default (unlimited), as the kubelet leaves it.
    await assert.rejects(readFile(path.join(root, 'kubepods', 'burstable', 'podu1', 'cpu.max')), { code: 'ENOENT' });
  });
});

describe('the host cgroup layout from its mount table', () => {
  const line = (id: number, mountpoint: string, fsType: string, options: string): string =>
    `${id} 1 0:${id} / ${mountpoint} rw,nosuid,nodev,noexec,relatime shared:${id} - ${fsType} ${fsType} ${options}`;

  it('is v2 on a unified host, v1 on a hybrid or legacy one, and none without cgroups', () => {
    const unified = line(30, '/sys/fs/cgroup', 'cgroup2', 'rw,nsdelegate,memory_recursiveprot');
    const v1 = [line(31, '/sys/fs/cgroup/cpu,cpuacct', 'cgroup', 'rw,cpu,cpuacct'), line(32, '/sys/fs/cgroup/memory', 'cgroup', 'rw,memory'), line(33, '/sys/fs/cgroup/systemd', 'cgroup', 'rw,xattr,name=systemd')];
    const hybridUnified = line(34, '/sys/fs/cgroup/unified', 'cgroup2', 'rw,nsdelegate');
    assert.deepEqual(cgroupLayout([line(1, '/', 'ext4', 'rw'), unified].join('\n')), { version: 2, mountpoint: '/sys/fs/cgroup' });
    const hybrid = cgroupLayout([...v1, hybridUnified].join('\n'));
    assert.equal(hybrid.version, 1);
    assert.deepEqual(hybrid.version === 1 ? hybrid.hierarchies.map((h) => h.mountpoint) : [], ['/sys/fs/cgroup/cpu,cpuacct', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/systemd']);
    // Only a named (controller-less) v1 hierarchy beside the unified mount: v2 holds the controllers.
    assert.deepEqual(cgroupLayout([v1[2]!, unified].join('\n')), { version: 2, mountpoint: '/sys/fs/cgroup' });
    assert.deepEqual(cgroupLayout(line(1, '/', 'ext4', 'rw')), { version: 'none' });
  });
});
