/**
 * The kubelet's storage and cgroup timing families: the container log gauge (only running
 * containers of ready pods, from each container's own log directory, series of gone containers
 * dropped), directory walks and cgroup writes timed by the injected clock (failed ones included).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Container, PodSandbox } from '../cri/types.js';
import { timedCgroupFs, type CgroupOperation } from '../reconcilers/cgroups/timed-cgroupfs.js';
import type { CgroupFs } from '../reconcilers/cgroups/cgroupfs.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { MetricsRegistry } from '../util/metrics.js';
import { StatsCollector } from './stats-collector.js';
import { storageMetrics, timedDirMeasure, type ContainerLogUsage } from './storage-metrics.js';

const sandbox = (id: string, name: string, state: PodSandbox['state']): PodSandbox => ({ id, metadata: { name, namespace: 'ns', uid: `uid-${name}`, attempt: 0 }, state, createdAt: 1n, labels: {}, annotations: {}, runtimeHandler: '' });
const container = (id: string, sandboxId: string, name: string, state: Container['state']): Container => ({ id, podSandboxId: sandboxId, metadata: { name, attempt: 0 }, image: { image: 'x' }, imageRef: 'x', state, createdAt: 1n, labels: {}, annotations: {} });

function collectorMeasuring(measured: string[], podLogDir: string | undefined): StatsCollector {
  return new StatsCollector({
    nodeName: 'node-1',
    rootDir: '/root-dir',
    ...(podLogDir === undefined ? {} : { podLogDir }),
    runtime: {
      listPodSandbox: () => Promise.resolve([sandbox('s1', 'web', 'SANDBOX_READY'), sandbox('s0', 'old', 'SANDBOX_NOTREADY')]),
      listContainers: () => Promise.resolve([container('c1', 's1', 'app', 'CONTAINER_RUNNING'), container('c2', 's1', 'side', 'CONTAINER_EXITED'), container('c3', 's0', 'x', 'CONTAINER_RUNNING')]),
      listContainerStats: () => Promise.resolve([]),
    },
    images: { imageFsInfo: () => Promise.resolve([]) },
    clock: createFakeClock(),
    measureDir: (dir) => {
      measured.push(dir);
      return Promise.resolve({ usedBytes: 8192, inodesUsed: 3 });
    },
  });
}

describe('kubelet_container_log_filesystem_used_bytes', () => {
  it("measures each running container of a ready pod in its own log directory, nothing else", async () => {
    const measured: string[] = [];
    const usage = await collectorMeasuring(measured, '/var/log/pods').containerLogUsage();
    assert.deepEqual(usage, [{ uid: 'uid-web', namespace: 'ns', pod: 'web', container: 'app', usedBytes: 8192 }]);
    assert.deepEqual(measured, [path.join('/var/log/pods', 'ns_web_uid-web', 'app')]);
  });

  it('has nothing to measure without a pod log directory', async () => {
    const measured: string[] = [];
    assert.deepEqual(await collectorMeasuring(measured, undefined).containerLogUsage(), []);
    assert.deepEqual(measured, []);
  });

  it('writes one series per container at each scrape and drops the series of containers that went', async () => {
    const registry = new MetricsRegistry();
    let usage: ContainerLogUsage[] = [
      { uid: 'u1', namespace: 'ns', pod: 'web', container: 'app', usedBytes: 4096 },
      { uid: 'u1', namespace: 'ns', pod: 'web', container: 'side', usedBytes: 12288 },
    ];
    storageMetrics(registry).watchContainerLogs(() => Promise.resolve(usage));
    const first = await registry.expose();
    assert.match(first, /^kubelet_container_log_filesystem_used_bytes\{uid="u1",namespace="ns",pod="web",container="app"\} 4096$/m);
    assert.match(first, /^kubelet_container_log_filesystem_used_bytes\{uid="u1",namespace="ns",pod="web",container="side"\} 12288$/m);
    usage = [{ uid: 'u1', namespace: 'ns', pod: 'web', container: 'app', usedBytes: 8192 }];
    const second = await registry.expose();
    assert.match(second, /container="app"\} 8192$/m);
    assert.doesNotMatch(second, /container="side"/);
  });
});

describe('kubelet_volume_metric_collection_duration_seconds', () => {
  it('observes each walk as du by the injected clock, a failed walk too', async () => {
    const clock = createFakeClock();
    const observed: number[] = [];
    const walk = timedDirMeasure(async (dir) => {
      await clock.advance(250);
      if (dir === '/gone') throw new Error('EIO');
      return { usedBytes: 1, inodesUsed: 1 };
    }, clock, (seconds) => observed.push(seconds));
    await walk('/here');
    await assert.rejects(walk('/gone'), /EIO/);
    assert.deepEqual(observed, [0.25, 0.25]);
    const registry = new MetricsRegistry();
    storageMetrics(registry).diskUsageMeasured(0.25);
    assert.match(registry.text(), /^kubelet_volume_metric_collection_duration_seconds_count\{metric_source="du"\} 1$/m);
  });
});

describe('kubelet_cgroup_manager_duration_seconds', () => {
  it('times create, update and destroy, not the reads', async () => {
    const clock = createFakeClock();
    const slow = async (): Promise<void> => { await clock.advance(100); };
    const fs: CgroupFs = {
      create: slow,
      update: slow,
      destroy: () => Promise.reject(new Error('EBUSY')),
      read: () => Promise.resolve({}),
      exists: () => Promise.resolve(true),
      existsAnywhere: () => Promise.resolve(true),
      children: () => Promise.resolve([]),
      pids: () => Promise.resolve([]),
    };
    const observed: [CgroupOperation, number][] = [];
    const timed = timedCgroupFs(fs, clock, (op, seconds) => observed.push([op, seconds]));
    await timed.create('/kubepods', {});
    await timed.update('/kubepods', {});
    await timed.read('/kubepods');
    await timed.exists('/kubepods');
    await assert.rejects(timed.destroy('/kubepods/pod1'), /EBUSY/);
    assert.deepEqual(observed, [['create', 0.1], ['update', 0.1], ['destroy', 0]]);
    const registry = new MetricsRegistry();
    storageMetrics(registry).cgroupOperated('create', 0.1);
    assert.match(registry.text(), /^kubelet_cgroup_manager_duration_seconds_count\{operation_type="create"\} 1$/m);
  });
});
