/**
 * `/metrics/cadvisor` end to end on laid-out trees: a cgroup v2 hierarchy (root, kubepods, a
 * burstable pod with its sandbox and a CPU- and memory-limited container) and a fake `/proc`
 * (network counters, limits, descriptors, mount table, diskstats) on a temporary directory, as
 * the v2 pod cgroup tests do (this machine is cgroup v1), with a fake runtime. Also a container
 * that vanishes between the walk and its read, a runtime that cannot be listed, and a cgroup
 * filesystem that never answers (the deadline).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Container, ContainerStats, PodSandbox } from '../cri/types.js';
import { requestAttributes } from './authz.js';
import { matchRoute } from './routes.js';
import { cadvisorRoute } from './stats-routes.js';
import { CadvisorCollector, type CadvisorCollectorDeps } from './cadvisor-collector.js';
import { cgroupTreeOf, type CgroupTree } from './cgroup-stats-reader.js';
import type { MachineInfo } from './machine-info.js';

const UID = '1b2c';
const SANDBOX = 'a'.repeat(64);
const CONTAINER = 'c'.repeat(64);
const POD_CG = `/kubepods/burstable/pod${UID}`;

const MACHINE: MachineInfo = { cores: 2, physicalCores: 2, sockets: 1, books: 0, drawers: 0, memoryBytes: 4 * 2 ** 30, swapBytes: 0, machineId: 'm1', systemUuid: 'u1', bootId: 'b1' };

const sandbox: PodSandbox = { id: SANDBOX, metadata: { name: 'burner', namespace: 'ns', uid: UID, attempt: 0 }, state: 'SANDBOX_READY', createdAt: 1_700_000_000_000_000_000n, labels: {}, annotations: {}, runtimeHandler: '' };
const container: Container = {
  id: CONTAINER,
  podSandboxId: SANDBOX,
  metadata: { name: 'main', attempt: 0 },
  image: { image: 'docker.io/library/busybox:1.36' },
  imageRef: 'sha256:1',
  state: 'CONTAINER_RUNNING',
  createdAt: 1_700_000_001_000_000_000n,
  labels: {},
  annotations: {},
};
const layer: ContainerStats = { id: CONTAINER, name: 'main', labels: {}, cpu: undefined, memory: undefined, writableLayer: { timestamp: 0n, mountpoint: '', usedBytes: 8192n, inodesUsed: 3n } };

async function write(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

const NET_DEV = 'Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n';
const netLine = (name: string, rx: number, tx: number): string => `${name}: ${String(rx)} 2 0 0 0 0 0 0 ${String(tx)} 3 0 0 0 0 0 0\n`;
const LIMITS = 'Limit  Soft Limit  Hard Limit  Units\nMax open files            1048576              1048576              files\n';

async function layOut(dir: string): Promise<{ cgroups: string; proc: string }> {
  const cgroups = path.join(dir, 'cgroup');
  const proc = path.join(dir, 'proc');
  const cg = (id: string, name: string, text: string): Promise<void> => write(path.join(cgroups, id, name), text);
  await cg('/', 'cgroup.procs', '1\n');
  await cg('/', 'cpu.stat', 'usage_usec 9000000\nuser_usec 6000000\nsystem_usec 3000000\n');
  await cg('/', 'memory.stat', 'anon 1000\nfile 2000\ninactive_file 500\n');
  for (const id of ['/kubepods', '/kubepods/burstable', POD_CG]) {
    await cg(id, 'cgroup.procs', '');
    await cg(id, 'cpu.stat', 'usage_usec 0\nuser_usec 0\nsystem_usec 0\n');
    await cg(id, 'cpu.weight', '100\n');
    await cg(id, 'cpu.max', 'max 100000\n');
    await cg(id, 'memory.current', '4096\n');
    await cg(id, 'memory.max', 'max\n');
  }
  await cg(`${POD_CG}/${SANDBOX}`, 'cgroup.procs', '100\n');
  await cg(`${POD_CG}/${SANDBOX}`, 'cpu.stat', 'usage_usec 10\n');
  const c = `${POD_CG}/${CONTAINER}`;
  await cg(c, 'cgroup.procs', '101\n102\n');
  await cg(c, 'cpu.stat', 'usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 30\nnr_throttled 20\nthrottled_usec 2000000\n');
  await cg(c, 'cpu.weight', '4\n');
  await cg(c, 'cpu.max', '20000 100000\n');
  await cg(c, 'memory.current', '33554432\n');
  await cg(c, 'memory.max', '67108864\n');
  await cg(c, 'memory.events', 'high 0\nmax 4\noom_kill 1\n');
  await cg(c, 'memory.stat', 'anon 30000000\nfile 3000000\ninactive_file 1000000\nactive_file 2000000\n');
  await cg(c, 'io.stat', '254:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n');
  await cg(c, 'pids.current', '2\n');
  await cg(c, 'pids.max', '1024\n');
  await write(path.join(proc, '1', 'net', 'dev'), NET_DEV + netLine('lo', 5, 5) + netLine('eth0', 1000, 2000));
  await write(path.join(proc, '1', 'limits'), LIMITS);
  await write(path.join(proc, '100', 'net', 'dev'), NET_DEV + netLine('eth0', 70, 80));
  await write(path.join(proc, '101', 'limits'), LIMITS);
  await mkdir(path.join(proc, '101', 'fd'), { recursive: true });
  await symlink('/dev/null', path.join(proc, '101', 'fd', '0'));
  await symlink('socket:[4242]', path.join(proc, '101', 'fd', '3'));
  await write(path.join(proc, 'self', 'mountinfo'), '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n');
  await write(path.join(proc, 'diskstats'), ' 254       0 vda 10 1 80 5000 20 2 160 7000 0 9000 12000 0 0 0 0\n');
  return { cgroups, proc };
}

function series(text: string, family: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${family}{`) || l.startsWith(`${family} `));
}

const containerLabels = `container="main",id="${POD_CG}/${CONTAINER}",image="docker.io/library/busybox:1.36",name="${CONTAINER}",namespace="ns",pod="burner"`;

describe('/metrics/cadvisor on a laid-out cgroup v2 tree', () => {
  let dir: string;
  let paths: { cgroups: string; proc: string };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'cadvisor-'));
    paths = await layOut(dir);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const deps = (overrides: Partial<CadvisorCollectorDeps> = {}): CadvisorCollectorDeps => ({
    runtime: { listPodSandbox: () => Promise.resolve([sandbox]), listContainers: () => Promise.resolve([container]), listContainerStats: () => Promise.resolve([layer]) },
    images: { imageFsInfo: () => Promise.resolve([{ timestamp: 0n, mountpoint: dir, usedBytes: 0n, inodesUsed: 0n }]) },
    cgroupRoot: '/',
    sandboxImage: 'registry.k8s.io/pause:3.10',
    tree: () => Promise.resolve(cgroupTreeOf({ version: 2, mountpoint: paths.cgroups })),
    machine: () => Promise.resolve(MACHINE),
    version: () => Promise.resolve({ kernelVersion: '6.1.0', osVersion: 'Debian GNU/Linux 12 (bookworm)' }),
    rootDirs: [dir],
    procDir: paths.proc,
    now: () => 1_700_000_100_000,
    ...overrides,
  });

  it("labels a container's series as the kubelet does and writes its CPU, throttling and memory", async () => {
    const text = await new CadvisorCollector(deps()).scrape();
    assert.match(text, new RegExp(`^container_cpu_usage_seconds_total\\{${containerLabels.replace('container="main",', 'container="main",cpu="total",').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\} 1\\.5 \\d+$`, 'm'));
    assert.deepEqual(series(text, 'container_cpu_cfs_throttled_periods_total').map((l) => l.split('} ')[1]?.split(' ')[0]), ['20']);
    assert.ok(series(text, 'container_cpu_cfs_throttled_seconds_total')[0]?.includes(`{${containerLabels}} 2 `));
    assert.deepEqual(series(text, 'container_spec_cpu_quota'), [`container_spec_cpu_quota{${containerLabels}} 20000`]);
    assert.ok(series(text, 'container_spec_memory_limit_bytes').includes(`container_spec_memory_limit_bytes{${containerLabels}} 6.7108864e+07`));
    assert.ok(series(text, 'container_memory_working_set_bytes').some((l) => l.startsWith(`container_memory_working_set_bytes{${containerLabels}} 3.2554432e+07 `)));
    assert.ok(series(text, 'container_oom_events_total').some((l) => l.startsWith(`container_oom_events_total{${containerLabels}} 1 `)));
    assert.ok(series(text, 'container_memory_failcnt').some((l) => l.startsWith(`container_memory_failcnt{${containerLabels}} 4 `)));
    assert.match(text, /^# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds\.\n# TYPE container_cpu_usage_seconds_total counter$/m);
  });

  it('labels the pod cgroup with its pod, the sandbox with the sandbox image; "max" limits are 0; no CFS series without a quota', async () => {
    const text = await new CadvisorCollector(deps()).scrape();
    const limits = series(text, 'container_spec_memory_limit_bytes');
    assert.ok(limits.includes(`container_spec_memory_limit_bytes{container="",id="${POD_CG}",image="",name="",namespace="ns",pod="burner"} 0`));
    assert.ok(limits.includes('container_spec_memory_limit_bytes{container="",id="/",image="",name="",namespace="",pod=""} 4.294967296e+09'));
    assert.ok(series(text, 'container_last_seen').some((l) => l.includes(`image="registry.k8s.io/pause:3.10",name="${SANDBOX}",namespace="ns",pod="burner"`)));
    assert.equal(series(text, 'container_cpu_cfs_periods_total').length, 1);
    // No usage yet, no usage series (cAdvisor writes the total only once it is above 0).
    assert.ok(!series(text, 'container_cpu_usage_seconds_total').some((l) => l.includes('id="/kubepods"')));
  });

  it("writes network counters for the root and each sandbox's namespace only, without loopback", async () => {
    const rx = series(await new CadvisorCollector(deps()).scrape(), 'container_network_receive_bytes_total').map((l) => l.replace(/ \d+$/, ''));
    assert.deepEqual(rx, [
      'container_network_receive_bytes_total{container="",id="/",image="",interface="eth0",name="",namespace="",pod=""} 1000',
      `container_network_receive_bytes_total{container="",id="${POD_CG}/${SANDBOX}",image="registry.k8s.io/pause:3.10",interface="eth0",name="${SANDBOX}",namespace="ns",pod="burner"} 70`,
    ]);
  });

  it('writes processes, descriptors, sockets, threads, ulimits, block I/O and the writable layer', async () => {
    const text = await new CadvisorCollector(deps()).scrape();
    const value = (family: string): string | undefined => series(text, family).find((l) => l.includes(`{${containerLabels}`) || l.includes(`id="${POD_CG}/${CONTAINER}"`))?.split(' ')[1];
    assert.deepEqual(['container_processes', 'container_file_descriptors', 'container_sockets', 'container_threads', 'container_threads_max', 'container_ulimits_soft'].map(value), ['2', '2', '1', '2', '1024', '1.048576e+06']);
    assert.deepEqual(['container_fs_reads_bytes_total', 'container_fs_writes_total', 'container_fs_usage_bytes'].map(value), ['4096', '2', '8192']);
    assert.ok(series(text, 'container_fs_reads_total').some((l) => l.includes('device="/dev/vda",id="/"') && l.includes(' 10 ')));
    assert.ok(series(text, 'container_fs_io_time_seconds_total').some((l) => l.includes('id="/"') && l.includes(' 9 ')));
  });

  it('writes the machine and version families and no scrape error', async () => {
    const text = await new CadvisorCollector(deps()).scrape();
    assert.match(text, /^machine_cpu_cores\{boot_id="b1",machine_id="m1",system_uuid="u1"\} 2$/m);
    assert.match(text, /^cadvisor_version_info\{cadvisorRevision="",cadvisorVersion="",dockerVersion="",kernelVersion="6\.1\.0",osVersion="Debian GNU\/Linux 12 \(bookworm\)"\} 1$/m);
    assert.match(text, /^container_scrape_error 0$/m);
    assert.match(text, /^machine_scrape_error 0$/m);
  });

  it('skips a container whose cgroup vanished between the walk and its read', async () => {
    const real = cgroupTreeOf({ version: 2, mountpoint: paths.cgroups });
    assert.ok(real !== undefined);
    const racing: CgroupTree = {
      version: 2,
      children: async (id, signal) => {
        const names = await real.children(id, signal);
        // The container exits right after it was listed.
        if (id === POD_CG) await rm(path.join(paths.cgroups, POD_CG, CONTAINER), { recursive: true });
        return names;
      },
      read: (id, signal) => real.read(id, signal),
    };
    const text = await new CadvisorCollector(deps({ tree: () => Promise.resolve(racing) })).scrape();
    assert.ok(!text.includes(`name="${CONTAINER}"`));
    assert.ok(text.includes(`name="${SANDBOX}"`));
    assert.match(text, /^container_scrape_error 0$/m);
  });

  it('reports container_scrape_error 1 and the machine when the runtime cannot be listed', async () => {
    const runtime = { ...deps().runtime, listContainers: () => Promise.reject(new Error('runtime down')) };
    const text = await new CadvisorCollector(deps({ runtime })).scrape();
    assert.match(text, /^container_scrape_error 1$/m);
    assert.match(text, /^machine_memory_bytes\{/m);
    assert.ok(!text.includes('container_last_seen'));
  });

  it('answers by its deadline when a cgroup read never returns', async () => {
    const real = cgroupTreeOf({ version: 2, mountpoint: paths.cgroups });
    assert.ok(real !== undefined);
    const stuck: CgroupTree = {
      version: 2,
      children: (id, signal) => real.children(id, signal),
      read: (id, signal) =>
        id.endsWith(CONTAINER)
          ? new Promise((_resolve, reject) => {
              signal.addEventListener('abort', () => {
                reject(new Error('aborted'));
              });
            })
          : real.read(id, signal),
    };
    const started = Date.now();
    const text = await new CadvisorCollector(deps({ tree: () => Promise.resolve(stuck), timeoutMs: 200 })).scrape();
    assert.ok(Date.now() - started < 2000);
    assert.match(text, /^container_scrape_error 1$/m);
    assert.ok(text.includes(`name="${SANDBOX}"`));
  });

  it('reads a missing cgroup as gone, not as an error', async () => {
    const tree = cgroupTreeOf({ version: 2, mountpoint: paths.cgroups });
    assert.equal(await tree?.read('/kubepods/none', new AbortController().signal), undefined);
  });
});

describe('/metrics/cadvisor on a laid-out cgroup v1 tree', () => {
  it('reads each hierarchy and labels the container cgroup', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cadvisor-v1-'));
    try {
      const id = `${POD_CG}/${CONTAINER}`;
      const hier = (name: string): string => path.join(dir, name);
      await write(path.join(hier('cpu,cpuacct'), id, 'cgroup.procs'), '101\n');
      await write(path.join(hier('cpu,cpuacct'), id, 'cpuacct.usage'), '2500000000\n');
      await write(path.join(hier('cpu,cpuacct'), id, 'cpu.cfs_quota_us'), '-1\n');
      await write(path.join(hier('cpu,cpuacct'), id, 'cpu.shares'), '2\n');
      await write(path.join(hier('memory'), id, 'memory.usage_in_bytes'), '1024\n');
      await write(path.join(hier('memory'), id, 'memory.limit_in_bytes'), '9223372036854771712\n');
      const tree = cgroupTreeOf({ version: 1, hierarchies: [{ mountpoint: hier('cpu,cpuacct'), subsystems: ['cpu', 'cpuacct'] }, { mountpoint: hier('memory'), subsystems: ['memory'] }] });
      const reading = await tree?.read(id, new AbortController().signal);
      assert.deepEqual([reading?.figures.cpu?.totalNs, reading?.figures.memory?.usage, reading?.figures.spec.cpuQuotaUs, reading?.pids], [2_500_000_000, 1024, 0, [101]]);
      assert.deepEqual(await tree?.children(POD_CG, new AbortController().signal), [CONTAINER]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /metrics/cadvisor', () => {
  it('is served as Prometheus text, authorized as nodes/metrics', async () => {
    const collector = new CadvisorCollector({
      runtime: { listPodSandbox: () => Promise.resolve([]), listContainers: () => Promise.resolve([]), listContainerStats: () => Promise.resolve([]) },
      images: { imageFsInfo: () => Promise.resolve([]) },
      cgroupRoot: undefined,
      sandboxImage: '',
      tree: () => Promise.resolve(undefined),
      machine: () => Promise.resolve(MACHINE),
      version: () => Promise.reject(new Error('no os-release')),
      rootDirs: [],
    });
    const match = matchRoute([cadvisorRoute(collector)], 'GET', '/metrics/cadvisor');
    assert.equal(match.kind, 'found');
    const res = Object.assign(new EventEmitter(), {
      head: undefined as { status: number; headers: Record<string, string | number> } | undefined,
      body: '',
      writeHead(status: number, headers: Record<string, string | number>) {
        this.head = { status, headers };
        return this;
      },
      end(text: string) {
        this.body = text;
        return this;
      },
    });
    if (match.kind === 'found') await match.handler({ req: {} as never, res: res as unknown as ServerResponse, params: [], query: new URLSearchParams() });
    assert.equal(res.head?.status, 200);
    assert.equal(res.head?.headers['Content-Type'], 'text/plain; version=0.0.4; charset=utf-8');
    // No cgroup filesystem: nothing about containers, and said so.
    assert.match(res.body, /^container_scrape_error 1$/m);
    assert.match(res.body, /^machine_cpu_cores\{/m);
    assert.deepEqual(requestAttributes('GET', '/metrics/cadvisor'), { verb: 'get', subresources: ['metrics'] });
  });
});
