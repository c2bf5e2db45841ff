/**
 * End to end: `/metrics/cadvisor` through the API server's node proxy, with a known pod: a
 * busybox container burning CPU (`while :; do :; done`) limited to 200m CPU and 64Mi of memory.
 * The scrape has the kubelet's families with the kubelet's labels for the pod cgroup, the
 * sandbox and the container; the container's figures agree with its cgroup files on the host
 * (cgroup v1 with the cgroupfs driver: `/sys/fs/cgroup/<controller>/kubepods/burstable/pod<uid>/<id>`)
 * and with the runtime (crictl); the CPU quota gives CFS series that grow while the container is
 * throttled; the sandbox has network counters.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, kubectl, requireCluster, waitForPhase } from './helpers.js';

async function scrape(): Promise<string> {
  return kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics/cadvisor`]);
}

/** The value of the one series of `family` whose labels include every `want` pair. */
function valueOf(text: string, family: string, want: Readonly<Record<string, string>>): number | undefined {
  const needles = Object.entries(want).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${family}{`) && needles.every((n) => l.includes(n)));
  return line === undefined ? undefined : Number(line.slice(line.indexOf('} ') + 2).split(' ')[0]);
}

/** The cgroup of a container: its cgroup.procs' first process's line for `controller` in /proc/<pid>/cgroup. */
async function cgroupDir(controller: string, pid: number): Promise<string> {
  const lines = (await readFile(`/proc/${String(pid)}/cgroup`, 'utf8')).split('\n');
  const line = lines.find((l) => l.split(':')[1]?.split(',').includes(controller));
  assert.ok(line !== undefined, `no ${controller} line for pid ${String(pid)}`);
  // The hierarchy's directory is named by its controllers: `cpu,cpuacct` when joined, `cpuacct` alone.
  return `/sys/fs/cgroup/${line.split(':')[1] ?? controller}${line.split(':')[2] ?? ''}`;
}

describe('/metrics/cadvisor', () => {
  let namespace = '';
  let uid = '';
  let containerId = '';
  let sandboxId = '';
  let pid = 0;

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-cadvisor');
    const pod = busyboxPod({ name: 'burner', namespace, script: 'while :; do :; done', nodeName: NODE_NAME }) as { spec: { containers: object[] } };
    pod.spec.containers = [{ ...(pod.spec.containers[0] ?? {}), resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } } }];
    await apply(pod);
    uid = (await waitForPhase(namespace, 'burner', 'Running')).metadata?.uid ?? '';
    containerId = (await crictl(['ps', '-q', '--label', `io.kubernetes.pod.uid=${uid}`, '--label', 'io.kubernetes.container.name=main'])).trim();
    sandboxId = (await crictl(['pods', '-q', '--label', `io.kubernetes.pod.uid=${uid}`])).trim();
    const inspect = JSON.parse(await crictl(['inspect', containerId])) as { info: { pid: number } };
    pid = inspect.info.pid;
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("has the kubelet's labels for the pod cgroup, the sandbox and the container", async () => {
    const text = await scrape();
    const podCgroup = `/kubepods/burstable/pod${uid}`;
    assert.ok(valueOf(text, 'container_spec_cpu_shares', { container: '', id: podCgroup, namespace, pod: 'burner' }) !== undefined, 'pod cgroup series');
    assert.ok(valueOf(text, 'container_last_seen', { container: '', id: `${podCgroup}/${sandboxId}`, name: sandboxId, namespace, pod: 'burner' }) !== undefined, 'sandbox series');
    assert.ok(valueOf(text, 'container_last_seen', { container: 'main', id: `${podCgroup}/${containerId}`, name: containerId, namespace, pod: 'burner' }) !== undefined, 'container series');
    assert.ok(valueOf(text, 'container_network_receive_bytes_total', { name: sandboxId, interface: 'eth0' }) !== undefined, 'sandbox network');
    assert.equal(valueOf(text, 'container_network_receive_bytes_total', { name: containerId }), undefined, 'no network series for the container');
    assert.match(text, /^container_scrape_error 0$/m);
    assert.match(text, /^machine_cpu_cores\{boot_id="[^"]*",machine_id="[^"]*",system_uuid="[^"]*"\} \d+$/m);
  });

  it("agrees with the container's cgroup files and the runtime", async () => {
    const labels = { container: 'main', pod: 'burner', namespace };
    const cpuDir = await cgroupDir('cpu', pid);
    // cpuacct may be its own hierarchy (as on this machine's kind) or joined with cpu.
    const cpuacctDir = await cgroupDir('cpuacct', pid);
    const memoryDir = await cgroupDir('memory', pid);
    const before = Number((await readFile(`${cpuacctDir}/cpuacct.usage`, 'utf8')).trim()) / 1e9;
    const text = await scrape();
    const after = Number((await readFile(`${cpuacctDir}/cpuacct.usage`, 'utf8')).trim()) / 1e9;
    const cpu = valueOf(text, 'container_cpu_usage_seconds_total', { ...labels, cpu: 'total' });
    assert.ok(cpu !== undefined && cpu >= before && cpu <= after, `cpu ${String(cpu)} within [${String(before)}, ${String(after)}]`);
    assert.equal(valueOf(text, 'container_spec_cpu_quota', labels), Number((await readFile(`${cpuDir}/cpu.cfs_quota_us`, 'utf8')).trim()));
    assert.equal(valueOf(text, 'container_spec_cpu_quota', labels), 20000);
    assert.equal(valueOf(text, 'container_spec_cpu_period', labels), 100000);
    assert.equal(valueOf(text, 'container_spec_memory_limit_bytes', labels), 64 * 2 ** 20);
    assert.equal(valueOf(text, 'container_spec_memory_limit_bytes', labels), Number((await readFile(`${memoryDir}/memory.limit_in_bytes`, 'utf8')).trim()));
    const workingSet = valueOf(text, 'container_memory_working_set_bytes', labels) ?? 0;
    assert.ok(workingSet > 0 && workingSet <= 64 * 2 ** 20, `working set ${String(workingSet)}`);
    const stats = JSON.parse(await crictl(['stats', '-o', 'json', '--id', containerId])) as { stats: { memory: { workingSetBytes: { value: string } } }[] };
    const runtimeWs = Number(stats.stats[0]?.memory.workingSetBytes.value ?? NaN);
    assert.ok(Math.abs(runtimeWs - workingSet) <= 4 * 2 ** 20, `working set ${String(workingSet)} near the runtime's ${String(runtimeWs)}`);
    assert.ok((valueOf(text, 'container_processes', labels) ?? 0) >= 1);
    assert.ok((valueOf(text, 'container_threads', labels) ?? 0) >= 1);
    assert.ok(valueOf(text, 'container_oom_events_total', labels) === 0);
  });

  it('throttles the CPU-bound container: its CFS series grow between scrapes', async () => {
    const labels = { container: 'main', pod: 'burner', namespace };
    const first = await scrape();
    await sleep(3000);
    const second = await scrape();
    for (const family of ['container_cpu_cfs_periods_total', 'container_cpu_cfs_throttled_periods_total', 'container_cpu_cfs_throttled_seconds_total', 'container_cpu_usage_seconds_total']) {
      const a = valueOf(first, family, labels) ?? NaN;
      const b = valueOf(second, family, labels) ?? NaN;
      assert.ok(b > a, `${family}: ${String(a)} → ${String(b)}`);
    }
    // 200m: no more than a fifth of a core over the interval, with slack for scheduling.
    const a = valueOf(first, 'container_cpu_usage_seconds_total', labels) ?? 0;
    const b = valueOf(second, 'container_cpu_usage_seconds_total', labels) ?? 0;
    assert.ok(b - a < 3 * 0.2 * 1.5 + 0.5, `CPU ${String(b - a)} s in ~3 s at 200m`);
  });
});
