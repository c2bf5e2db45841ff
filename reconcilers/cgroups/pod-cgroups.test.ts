/**
 * The pod cgroup manager over an in-memory cgroup filesystem: the QoS hierarchy at start, a pod
 * cgroup made once (never rewritten by a later sync or a restart), the Burstable shares following
 * the active pods, removal on termination (stray processes killed first), the orphan pass.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock, settle, type FakeClock } from '../../test/doubles/fake-clock.js';
import { FakeCgroupFs } from '../../test/doubles/fake-cgroupfs.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { PodCgroupManager } from './pod-cgroups.js';

function burstable(uid: string, cpu: string): V1Pod {
  return basePod((p) => {
    p.metadata!.uid = uid;
    p.spec!.containers[0]!.resources = { requests: { cpu }, limits: { memory: '64Mi' } };
  });
}

function setup(active: V1Pod[] = []): { fs: FakeCgroupFs; manager: PodCgroupManager; killed: number[]; active: V1Pod[]; clock: FakeClock } {
  const fs = new FakeCgroupFs();
  const clock = createFakeClock();
  const killed: number[] = [];
  const manager = new PodCgroupManager({
    fs,
    cgroupRoot: '/',
    allocatable: () => ({ milliCpu: 2000, memoryBytes: 4096 * 2 ** 20 }),
    activePods: () => active,
    kill: (pid) => {
      killed.push(pid);
      fs.exit(pid);
    },
    clock,
    logger: pino({ level: 'silent' }),
  });
  return { fs, manager, killed, active, clock };
}

describe('pod cgroup manager', () => {
  it('creates kubepods with allocatable and the QoS cgroups; a restart leaves the Burstable shares to the first update', async () => {
    const { fs, manager } = setup([burstable('a', '250m')]);
    await fs.create('/kubepods/burstable', { cpuShares: 512 });
    await manager.start();
    assert.deepEqual(fs.cgroups.get('/kubepods'), { cpuShares: 2048, memoryLimitBytes: 4096 * 2 ** 20 });
    assert.deepEqual(fs.cgroups.get('/kubepods/burstable'), { cpuShares: 512 });
    assert.deepEqual(fs.cgroups.get('/kubepods/besteffort'), { cpuShares: 2 });
    await manager.updateQos();
    assert.deepEqual(fs.cgroups.get('/kubepods/burstable'), { cpuShares: 256 });
  });

  it('retries a removal the filesystem refuses right after termination', async () => {
    const pod = burstable('d', '100m');
    const { fs, manager, clock } = setup();
    await manager.start();
    await manager.ensurePod(pod);
    fs.busy.add('/kubepods/burstable/podd');
    manager.podTerminated({ uid: 'd', namespace: 'default', name: 'web' });
    await settle();
    assert.equal(fs.cgroups.has('/kubepods/burstable/podd'), true);
    fs.busy.clear();
    await clock.advance(1000);
    await settle();
    assert.equal(fs.cgroups.has('/kubepods/burstable/podd'), false);
    assert.equal(fs.calls.filter((c) => c === 'destroy /kubepods/burstable/podd').length, 2);
  });

  it('makes a pod cgroup once, counting the pod in the Burstable shares before it exists', async () => {
    const pod = burstable('b', '250m');
    const { fs, manager, active } = setup();
    await manager.start();
    active.push(pod);
    assert.equal(await manager.ensurePod(pod), '/kubepods/burstable/podb');
    // The sidecar declares no memory limit: no memory limit on the pod.
    assert.deepEqual(fs.cgroups.get('/kubepods/burstable/podb'), { cpuShares: 256 });
    assert.deepEqual(fs.cgroups.get('/kubepods/burstable'), { cpuShares: 256 });
    assert.ok(fs.calls.indexOf('update /kubepods/burstable') < fs.calls.indexOf('create /kubepods/burstable/podb'));
    // A later sync (or an agent restart) finds it and writes nothing.
    const writes = fs.calls.length;
    assert.equal(await manager.ensurePod(pod), '/kubepods/burstable/podb');
    assert.equal(fs.calls.length, writes);
  });

  it('removes a terminated pod\'s cgroup, killing what is left in it, then lowers the Burstable shares', async () => {
    const pod = burstable('c', '1');
    const { fs, manager, killed, active } = setup([pod]);
    await manager.start();
    await manager.ensurePod(pod);
    fs.procs.set('/kubepods/burstable/podc/ctr1', [41, 42]);
    active.length = 0;
    manager.podTerminated({ uid: 'c', namespace: 'default', name: 'web' });
    await settle();
    await settle();
    assert.deepEqual(killed, [41, 42]);
    assert.equal(fs.cgroups.has('/kubepods/burstable/podc'), false);
    assert.deepEqual(fs.cgroups.get('/kubepods/burstable'), { cpuShares: 2 });
    // Forgetting it later finds nothing to remove.
    assert.equal(await manager.removePod('c'), false);
    assert.deepEqual(fs.calls.filter((c) => c.startsWith('children')), [], 'only the pod\'s own names are looked at: the QoS parents are never listed');
  });

  it('the orphan pass keeps active pods and pods with running parts, removes the rest, counts failures', async () => {
    const kept = burstable('kept', '100m');
    const { fs, manager } = setup([kept]);
    await manager.start();
    for (const name of ['/kubepods/burstable/podkept', '/kubepods/podrunning', '/kubepods/besteffort/podgone', '/kubepods/burstable/podstuck', '/kubepods/burstable/notapod']) await fs.create(name, {});
    fs.busy.add('/kubepods/burstable/podstuck');
    const pass = await manager.removeOrphansExcept(new Set(['running']));
    assert.deepEqual(pass, { removed: 1, failed: 1 });
    const left = [...fs.cgroups.keys()].filter((n) => n.split('/').length > 3 || n === '/kubepods/podrunning').sort();
    assert.deepEqual(left, ['/kubepods/burstable/notapod', '/kubepods/burstable/podkept', '/kubepods/burstable/podstuck', '/kubepods/podrunning']);
  });

  it('resizes the pod cgroup one resource at a time, only in the direction asked (grow before the containers, shrink after)', async () => {
    const { fs, manager } = setup();
    const sized = (cpu: string, memory: string): V1Pod =>
      basePod((p) => {
        p.metadata!.uid = 'r1';
        p.spec!.containers = [{ ...p.spec!.containers[0]!, resources: { requests: { cpu, memory }, limits: { cpu, memory } } }];
      });
    await manager.start();
    const name = await manager.ensurePod(sized('200m', '64Mi'));
    // CPU up, memory down: the grow step raises only the CPU, the shrink step lowers only the memory.
    const resized = sized('400m', '32Mi');
    await manager.resize(resized, 'memory', 'grow');
    await manager.resize(resized, 'cpu', 'shrink');
    assert.deepEqual(fs.cgroups.get(name), { cpuShares: 204, cpuQuotaUs: 20000, cpuPeriodUs: 100000, memoryLimitBytes: 64 * 2 ** 20 }, 'nothing moved against its direction');
    await manager.resize(resized, 'cpu', 'grow');
    assert.deepEqual(fs.cgroups.get(name), { cpuShares: 409, cpuQuotaUs: 40000, cpuPeriodUs: 100000, memoryLimitBytes: 64 * 2 ** 20 });
    await manager.resize(resized, 'memory', 'shrink');
    assert.deepEqual(fs.cgroups.get(name), { cpuShares: 409, cpuQuotaUs: 40000, cpuPeriodUs: 100000, memoryLimitBytes: 32 * 2 ** 20 });
  });
});
