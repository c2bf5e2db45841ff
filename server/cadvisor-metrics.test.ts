/**
 * The pure parts of `/metrics/cadvisor`: Go's number format, the exposition's order and label
 * sets, the help texts and types against the kubelet v1.37.2's scrape of this machine, cgroup
 * labelling, machine info.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, PodSandbox } from '../cri/types.js';
import { classifyCgroup, deviceOf, kubepodsCgroup } from './cadvisor-cgroups.js';
import { cadvisorMetrics, containerFamilies, goFloat, type ContainerSample } from './cadvisor-metrics.js';
import { parseV1Cgroup } from './cgroup-stats.js';
import { parseMachineInfo, prettyName } from './machine-info.js';

describe("Go's float format", () => {
  it('writes what strconv.FormatFloat(v, g, -1, 64) writes (values from the kubelet scrape)', () => {
    const cases: [number, string][] = [[0, '0'], [262144, '262144'], [100000, '100000'], [3085470, '3.08547e+06'], [25276182528, '2.5276182528e+10'], [18416.441384189, '18416.441384189'], [1796646135, '1.796646135e+09'], [0.000466592, '0.000466592'], [0.00001, '1e-05'], [-1, '-1'], [2 ** 64, '1.8446744073709552e+19']];
    assert.deepEqual(cases.map(([v]) => [v, goFloat(v)]), cases);
  });
});

/** HELP and TYPE lines copied from the kubelet v1.37.2's /metrics/cadvisor on this machine (the families the kubernetes-mixin reads). */
const KUBELET_HELP: readonly [string, string, string][] = [
  ['container_cpu_usage_seconds_total', 'Cumulative cpu time consumed in seconds.', 'counter'],
  ['container_cpu_user_seconds_total', 'Cumulative user cpu time consumed in seconds.', 'counter'],
  ['container_memory_working_set_bytes', 'Current working set in bytes.', 'gauge'],
  ['container_memory_failcnt', 'Number of memory usage hits limits', 'counter'],
  ['container_memory_usage_bytes', 'Current memory usage in bytes, including all memory regardless of when it was accessed', 'gauge'],
  ['container_oom_events_total', 'Count of out of memory events observed for the container', 'counter'],
  ['container_spec_memory_reservation_limit_bytes', 'Memory reservation limit for the container.', 'gauge'],
  ['container_threads_max', 'Maximum number of threads allowed inside the container, infinity if value is zero', 'gauge'],
  ['container_fs_io_time_weighted_seconds_total', 'Cumulative weighted I/O time in seconds', 'counter'],
  ['container_network_receive_packets_dropped_total', 'Cumulative count of packets dropped while receiving', 'counter'],
  ['container_ulimits_soft', 'Soft ulimit values for the container root process. Unlimited if -1, except priority and nice', 'gauge'],
  ['container_last_seen', 'Last time a container was seen by the exporter', 'gauge'],
];

const root: ContainerSample = {
  labels: { container: '', id: '/', image: '', name: '', namespace: '', pod: '' },
  figures: parseV1Cgroup(new Map([['cpuacct.usage', '2000000000'], ['cpu.shares', '1024'], ['cpu.cfs_period_us', '100000'], ['cpu.cfs_quota_us', '-1'], ['memory.usage_in_bytes', '10'], ['memory.limit_in_bytes', '9223372036854771712']])),
  readAtMs: 1000,
  creationTimeSeconds: 5,
  startTimeSeconds: 5,
};

describe('the exposition', () => {
  it("has the kubelet's help texts and types", () => {
    const families = new Map(containerFamilies(0).map((f) => [f.name, f]));
    for (const [name, help, kind] of KUBELET_HELP) {
      assert.deepEqual([families.get(name)?.help, families.get(name)?.kind], [help, kind], name);
    }
  });

  it('sorts families by name and labels by name, stamps usage but not spec series, writes unlimited memory as 0', () => {
    const pod = { ...root, labels: { ...root.labels, id: '/kubepods', pod: 'p', namespace: 'n' } };
    const text = cadvisorMetrics({ nowMs: 9000, version: undefined, machine: undefined, containers: [pod, root], containerError: false });
    const names = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1] ?? '');
    assert.deepEqual(names, [...names].sort());
    assert.match(text, /^container_cpu_usage_seconds_total\{container="",cpu="total",id="\/",image="",name="",namespace="",pod=""\} 2 1000$/m);
    assert.match(text, /^container_spec_cpu_shares\{container="",id="\/",image="",name="",namespace="",pod=""\} 1024$/m);
    assert.match(text, /^container_spec_memory_limit_bytes\{container="",id="\/kubepods",image="",name="",namespace="n",pod="p"\} 0$/m);
    // Series in label-value order: "/" before "/kubepods".
    assert.ok(text.indexOf('container_last_seen{container="",id="/",') < text.indexOf('container_last_seen{container="",id="/kubepods"'));
    assert.match(text, /^container_last_seen\{container="",id="\/",[^}]*\} 9 9000$/m);
    assert.ok(!text.includes('container_spec_cpu_quota'));
    assert.match(text, /^machine_scrape_error 1$/m);
  });
});

describe('cgroup labels', () => {
  const sandbox: PodSandbox = { id: 'sb', metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 0 }, state: 'SANDBOX_READY', createdAt: 0n, labels: {}, annotations: {}, runtimeHandler: '' };
  const container: Container = { id: 'ct', podSandboxId: 'sb', metadata: { name: 'app', attempt: 1 }, image: { image: 'sha256:abc', userSpecifiedImage: 'nginx:1.27' }, imageRef: 'sha256:abc', state: 'CONTAINER_RUNNING', createdAt: 0n, labels: {}, annotations: {} };
  const view = { sandboxes: [sandbox], containers: [container], sandboxImage: 'pause:3.10' };

  it('labels the root, a QoS cgroup, a pod, its sandbox and its container', () => {
    assert.equal(kubepodsCgroup('/'), '/kubepods');
    assert.equal(kubepodsCgroup('/nodelet-kubelet'), '/nodelet-kubelet/kubepods');
    assert.equal(classifyCgroup('/', view).kind, 'root');
    assert.deepEqual(classifyCgroup('/kubepods/burstable', view).labels, { container: '', id: '/kubepods/burstable', image: '', name: '', namespace: '', pod: '' });
    assert.deepEqual(classifyCgroup('/kubepods/burstable/podu-1', view).labels, { container: '', id: '/kubepods/burstable/podu-1', image: '', name: '', namespace: 'prod', pod: 'web' });
    assert.deepEqual(classifyCgroup('/kubepods/burstable/podu-1/sb', view).labels, { container: '', id: '/kubepods/burstable/podu-1/sb', image: 'pause:3.10', name: 'sb', namespace: 'prod', pod: 'web' });
    assert.deepEqual(classifyCgroup('/kubepods/burstable/podu-1/ct', view).labels, { container: 'app', id: '/kubepods/burstable/podu-1/ct', image: 'nginx:1.27', name: 'ct', namespace: 'prod', pod: 'web' });
    assert.equal(classifyCgroup('/kubepods/burstable/podother', view).kind, 'plain');
  });

  it('finds the device of a directory from the mount table (tmpfs by its mount point)', () => {
    const mountinfo = '22 1 254:0 / / rw - ext4 /dev/vda rw\n30 22 0:25 / /dev/shm rw - tmpfs shm rw\n';
    assert.equal(deviceOf(mountinfo, '/var/lib/nodelet'), '/dev/vda');
    assert.equal(deviceOf(mountinfo, '/dev/shm/x'), '/dev/shm');
  });
});

describe('machine info', () => {
  it("counts CPUs as cAdvisor does and falls back for what is missing", () => {
    const cpuinfo = 'processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n';
    const info = parseMachineInfo({ cpuinfo, meminfo: 'MemTotal:       24683772 kB\nSwapTotal:             0 kB\n', machineId: 'abc\n', systemUuid: 'abc\n', bootId: 'b-1\n' });
    assert.deepEqual(info, { cores: 2, physicalCores: 2, sockets: 1, books: 0, drawers: 0, memoryBytes: 24683772 * 1024, swapBytes: 0, machineId: 'abc', systemUuid: 'abc', bootId: 'b-1' });
    assert.throws(() => parseMachineInfo({ cpuinfo, meminfo: '', machineId: '', systemUuid: '', bootId: '' }));
    assert.equal(prettyName('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'), 'Debian GNU/Linux 12 (bookworm)');
  });
});
