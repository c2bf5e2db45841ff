/**
 * The kubelet's cgroup values on plain pods: ResourceConfigForPod per QoS class (declared and
 * undeclared limits, overhead, pod-level resources, sidecars), the QoS shares, the names.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import {
  burstableCpuShares,
  kubepodsResources,
  milliCpuToQuota,
  milliCpuToShares,
  podCgroupName,
  podCgroupResources,
  podUidOfCgroup,
  qosCgroupNames,
  resizeDirection,
  resourceSettings,
  type CgroupResources,
} from './pod-cgroup-config.js';

const MI = 2 ** 20;

function resources(requests: Record<string, string>, limits: Record<string, string>): V1Container['resources'] {
  return { requests, limits };
}

/** `app` and `sidecar` with the given resources. */
function pod(app: V1Container['resources'], sidecar: V1Container['resources'], mutate?: (p: V1Pod) => void): V1Pod {
  return basePod((p) => {
    const [a, s] = p.spec!.containers;
    a!.resources = app;
    s!.resources = sidecar;
    mutate?.(p);
  });
}

describe('cgroup values', () => {
  it('converts CPU as the kubelet: shares 1024 per CPU within [2, 262144], quota per period at least 1 ms', () => {
    assert.deepEqual([0, 1, 100, 250, 1000, 300_000].map(milliCpuToShares), [2, 2, 102, 256, 1024, 262_144]);
    assert.deepEqual([0, 5, 200, 1500].map((m) => milliCpuToQuota(m, 100_000)), [0, 1000, 20_000, 150_000]);
  });

  it('Burstable with every limit declared: shares from requests, quota and memory from limits, overhead added to both', () => {
    const p = pod(resources({ cpu: '100m' }, { cpu: '200m', memory: '64Mi' }), resources({ cpu: '50m' }, { cpu: '300m', memory: '32Mi' }), (x) => {
      x.spec!.overhead = { cpu: '50m', memory: '16Mi' };
    });
    // shares: (100 + 50 + 50) m → 204; quota: (500 + 50) m → 55 ms; memory: 96 Mi + 16 Mi.
    assert.deepEqual(podCgroupResources(p), { cpuShares: 204, cpuQuotaUs: 55_000, cpuPeriodUs: 100_000, memoryLimitBytes: 112 * MI });
  });

  it('Burstable with a container lacking limits: no quota, no memory limit', () => {
    const p = pod(resources({ cpu: '100m' }, { cpu: '200m', memory: '64Mi' }), resources({ memory: '8Mi' }, {}));
    assert.deepEqual(podCgroupResources(p), { cpuShares: 102 });
    const memoryOnly = pod(resources({ cpu: '100m' }, { memory: '64Mi' }), resources({}, { memory: '8Mi' }));
    assert.deepEqual(podCgroupResources(memoryOnly), { cpuShares: 102, memoryLimitBytes: 72 * MI });
  });

  it('Guaranteed: shares, quota and memory always; BestEffort: shares 2 only', () => {
    const both = resources({ cpu: '250m', memory: '32Mi' }, { cpu: '250m', memory: '32Mi' });
    assert.deepEqual(podCgroupResources(pod(both, both)), { cpuShares: 512, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000, memoryLimitBytes: 64 * MI });
    assert.deepEqual(podCgroupResources(basePod()), { cpuShares: 2 });
  });

  it('pod-level resources replace the containers and declare the limits', () => {
    const p = pod(resources({}, {}), resources({}, {}), (x) => {
      x.spec!.resources = { requests: { cpu: '500m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi' } };
      x.status = { qosClass: 'Burstable' };
    });
    assert.deepEqual(podCgroupResources(p), { cpuShares: 512, cpuQuotaUs: 100_000, cpuPeriodUs: 100_000, memoryLimitBytes: 128 * MI });
  });

  it('init containers: the largest init step counts, a sidecar runs beside the later ones', () => {
    const p = pod(resources({ cpu: '100m' }, { cpu: '100m', memory: '10Mi' }), resources({ cpu: '100m' }, { cpu: '100m', memory: '10Mi' }), (x) => {
      x.spec!.initContainers = [
        { name: 'side', image: 'i', restartPolicy: 'Always', resources: resources({ cpu: '100m' }, { cpu: '100m', memory: '10Mi' }) },
        { name: 'big', image: 'i', resources: resources({ cpu: '900m' }, { cpu: '900m', memory: '100Mi' }) },
      ];
    });
    // limits: app 200 m + sidecar 100 m = 300 m < the big step 900 + 100 m; memory 110 Mi likewise.
    assert.deepEqual(podCgroupResources(p), { cpuShares: 1024, cpuQuotaUs: 100_000, cpuPeriodUs: 100_000, memoryLimitBytes: 110 * MI });
  });

  it('--pod-max-pids and --cpu-cfs-quota=false', () => {
    const p = pod(resources({ cpu: '100m' }, { cpu: '200m' }), resources({ cpu: '100m' }, { cpu: '200m' }));
    assert.deepEqual(podCgroupResources(p, { enforceCpuLimits: false, cpuPeriodUs: 100_000, podPidsLimit: 1024 }), { cpuShares: 204, cpuQuotaUs: -1, cpuPeriodUs: 100_000, pidsLimit: 1024 });
    assert.deepEqual(podCgroupResources(basePod(), { enforceCpuLimits: true, cpuPeriodUs: 100_000, podPidsLimit: 0 }), { cpuShares: 2 });
  });

  it('the Burstable QoS shares count only Burstable pods, with overhead; kubepods takes allocatable', () => {
    const burstable = pod(resources({ cpu: '300m' }, {}), resources({}, {}), (x) => { x.spec!.overhead = { cpu: '100m' }; });
    const guaranteedBoth = resources({ cpu: '1', memory: '1Mi' }, { cpu: '1', memory: '1Mi' });
    assert.equal(burstableCpuShares([burstable, burstable, pod(guaranteedBoth, guaranteedBoth), basePod()]), 819);
    assert.equal(burstableCpuShares([]), 2);
    assert.deepEqual(kubepodsResources({ milliCpu: 1900, memoryBytes: 1000 * MI }), { cpuShares: 1945, memoryLimitBytes: 1000 * MI });
  });

  it('names: Guaranteed under kubepods, the others under their QoS cgroup, the recorded QoS class first', () => {
    const names = qosCgroupNames('/');
    assert.deepEqual(names, { kubepods: '/kubepods', burstable: '/kubepods/burstable', besteffort: '/kubepods/besteffort' });
    const both = resources({ cpu: '1', memory: '1Mi' }, { cpu: '1', memory: '1Mi' });
    assert.equal(podCgroupName(names, pod(both, both)), '/kubepods/poduid-1');
    assert.equal(podCgroupName(names, basePod()), '/kubepods/besteffort/poduid-1');
    assert.equal(podCgroupName(qosCgroupNames('/nodelet/'), basePod((p) => { p.status = { qosClass: 'Burstable' }; })), '/nodelet/kubepods/burstable/poduid-1');
    assert.equal(podUidOfCgroup('pod1234'), '1234');
    assert.equal(podUidOfCgroup('pod'), undefined);
    assert.equal(podUidOfCgroup('burstable'), undefined);
  });

  it('tells a resize\'s direction per resource: CPU by quota per period then shares, memory by limit (unset, -1 and the kernel maximum are unlimited)', () => {
    const cpu = (quota: number, shares: number): CgroupResources => ({ cpuQuotaUs: quota, cpuPeriodUs: 100_000, cpuShares: shares });
    assert.equal(resizeDirection('cpu', cpu(20_000, 204), cpu(40_000, 409)), 'grow');
    assert.equal(resizeDirection('cpu', cpu(40_000, 409), cpu(20_000, 204)), 'shrink');
    assert.equal(resizeDirection('cpu', cpu(-1, 204), cpu(40_000, 409)), 'shrink', 'a quota where there was none limits the pod');
    assert.equal(resizeDirection('cpu', cpu(-1, 204), cpu(-1, 409)), 'grow', 'same quota: the shares decide');
    assert.equal(resizeDirection('cpu', cpu(-1, 204), cpu(-1, 204)), 'none');
    assert.equal(resizeDirection('memory', { memoryLimitBytes: 9223372036854771712 }, { memoryLimitBytes: 2 ** 26 }), 'shrink');
    assert.equal(resizeDirection('memory', { memoryLimitBytes: 2 ** 26 }, {}), 'grow');
    assert.equal(resizeDirection('memory', { memoryLimitBytes: 2 ** 26 }, { memoryLimitBytes: 2 ** 26 }), 'none');
    assert.deepEqual(resourceSettings({ cpuShares: 2, cpuQuotaUs: -1, memoryLimitBytes: 5, pidsLimit: 9 }, 'memory'), { memoryLimitBytes: 5 });
  });
});
