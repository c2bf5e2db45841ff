/**
 * End to end: the node's statistics as metrics-server and `kubectl get --raw` read them, through
 * the API server's node proxy to the node server. A pod with a busy container (`while :; do :;
 * done` limited to 200m CPU) and an idle one: `/stats/summary` lists the node and that pod with
 * exactly its two containers, non-zero working sets, and, from the second summary on, a busy
 * container using CPU (usageNanoCores > 0, no more than its limit allows) while the runtime's own
 * counter (crictl stats) agrees; `/metrics/resource` has the container, pod and node series with
 * their timestamps. A ServiceAccount token with only `nodes/proxy` gets 403 for both; one bound
 * to `nodes/stats` and `nodes/metrics` gets 200.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_IP, NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, kubectl, requireCluster, uniqueName, waitForPhase } from './helpers.js';

const run = promisify(execFile);
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';
// The harness gives the agent a serving certificate signed by the cluster CA (test/cluster/lib/agent.sh).
const SERVER_CA = path.join(CLUSTER_DIR, 'pki', 'ca.crt');

interface Cpu { time: string; usageNanoCores?: number; usageCoreNanoSeconds?: number }
interface Memory { time: string; workingSetBytes?: number; usageBytes?: number; availableBytes?: number }
interface FsFigures { usedBytes?: number; capacityBytes?: number; availableBytes?: number; inodesUsed?: number }
interface ContainerSummary { name: string; startTime: string; cpu?: Cpu; memory?: Memory; rootfs?: { usedBytes?: number }; logs?: FsFigures }
interface PodSummary { podRef: { name: string; namespace: string; uid: string }; startTime: string; containers: ContainerSummary[]; cpu?: Cpu; memory?: Memory; volume?: (FsFigures & { name: string })[]; 'ephemeral-storage'?: FsFigures }
interface Summary { node: { nodeName: string; startTime: string; cpu: Cpu; memory: Memory; fs: { capacityBytes: number; availableBytes: number }; runtime: { imageFs?: { capacityBytes: number; usedBytes: number } } }; pods: PodSummary[] }

async function summary(): Promise<Summary> {
  return JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/stats/summary`])) as Summary;
}

/** curl straight to the node server: status and body. */
async function curlNode(urlPath: string, token: string): Promise<{ status: number; body: string }> {
  const args = ['-sS', '--cacert', SERVER_CA, '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${token}`, `https://${NODE_IP}:10250${urlPath}`];
  const { stdout } = await run('curl', args, { timeout: 30_000 });
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

/** The runtime's own cumulative CPU of a container (crictl stats). */
async function runtimeCpuNanos(containerId: string): Promise<number> {
  const out = JSON.parse(await crictl(['stats', '-o', 'json', '--id', containerId])) as { stats: { cpu: { usageCoreNanoSeconds: { value: string } } }[] };
  return Number(out.stats[0]?.cpu.usageCoreNanoSeconds.value ?? NaN);
}

describe('node statistics: /stats/summary and /metrics/resource', () => {
  let namespace = '';
  let uid = '';
  const role = uniqueName('e2e-node-stats');

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-node-stats');
    const pod = busyboxPod({ name: 'busy', namespace, script: 'while :; do :; done', nodeName: NODE_NAME }) as { spec: { containers: object[] } };
    pod.spec.containers = [
      { ...(pod.spec.containers[0] ?? {}), resources: { limits: { cpu: '200m', memory: '64Mi' } } },
      { name: 'idle', image: 'busybox:1.35', command: ['sleep', '3600'] },
    ];
    await apply(pod);
    uid = (await waitForPhase(namespace, 'busy', 'Running')).metadata?.uid ?? '';
  });

  after(async () => {
    await kubectl(['delete', 'clusterrole,clusterrolebinding', role, '--ignore-not-found']).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('the summary shows the node and the pod with exactly its containers, busy CPU after two summaries, sane figures', async () => {
    await summary();
    const mainId = (await crictl(['ps', '-q', '--label', `io.kubernetes.pod.uid=${uid}`, '--label', 'io.kubernetes.container.name=main'])).trim();
    assert.match(mainId, /^[0-9a-f]{64}$/);
    await sleep(3000);
    const s = await summary();
    const runtimeAfter = await runtimeCpuNanos(mainId);
    assert.equal(s.node.nodeName, NODE_NAME);
    assert.ok((s.node.cpu.usageNanoCores ?? 0) > 0, 'node usageNanoCores > 0');
    assert.ok((s.node.cpu.usageCoreNanoSeconds ?? 0) > 0);
    assert.ok((s.node.memory.workingSetBytes ?? 0) > 0 && (s.node.memory.workingSetBytes ?? 0) <= (s.node.memory.usageBytes ?? 0));
    assert.ok(s.node.fs.capacityBytes > 0 && s.node.fs.availableBytes <= s.node.fs.capacityBytes);
    assert.ok((s.node.runtime.imageFs?.usedBytes ?? 0) > 0, 'the image fs has the runtime images');

    const pods = s.pods.filter((p) => p.podRef.uid === uid);
    assert.equal(pods.length, 1, 'the pod is listed once');
    const pod = pods[0];
    assert.deepEqual(pod?.podRef, { name: 'busy', namespace, uid });
    assert.deepEqual(pod.containers.map((c) => c.name), ['idle', 'main']);
    const [idle, main] = pod.containers;
    const mainCores = main?.cpu?.usageNanoCores ?? 0;
    assert.ok(mainCores > 0, 'the busy container uses CPU');
    // The CFS quota holds it to 0.2 core; a little over for the boundaries of the interval.
    assert.ok(mainCores <= 300_000_000, `busy container at ${mainCores} nanocores, its limit is 200m`);
    const mainNanos = main?.cpu?.usageCoreNanoSeconds ?? 0;
    assert.ok(mainNanos > 0 && mainNanos <= runtimeAfter, `summary ${mainNanos} ns, crictl afterwards ${runtimeAfter} ns`);
    for (const c of pod.containers) assert.ok((c.memory?.workingSetBytes ?? 0) > 0, `${c.name} working set > 0`);
    assert.equal(pod.memory?.workingSetBytes, (idle?.memory?.workingSetBytes ?? 0) + (main?.memory?.workingSetBytes ?? 0));
    console.log(
      `summary: node ${s.node.cpu.usageNanoCores ?? '?'} nanocores, working set ${s.node.memory.workingSetBytes ?? '?'} B; ` +
        `busy container ${mainCores} nanocores (limit 200m), ${mainNanos} core-ns (crictl ${runtimeAfter}), working set ${main?.memory?.workingSetBytes ?? '?'} B; ` +
        `idle ${idle?.cpu?.usageNanoCores ?? '?'} nanocores, working set ${idle?.memory?.workingSetBytes ?? '?'} B; pod working set ${pod.memory?.workingSetBytes ?? '?'} B`,
    );
  });

  it("reports a pod's volumes, its containers' logs and its ephemeral storage, as du measures them on the node", { timeout: 120_000 }, async () => {
    const name = 'writer';
    const pod = busyboxPod({ name, namespace, script: 'dd if=/dev/urandom of=/cache/data bs=1M count=5 2>/dev/null; seq 1 2000; touch /cache/done; sleep 3600', nodeName: NODE_NAME }) as { spec: { containers: { volumeMounts?: object[] }[]; volumes?: object[] } };
    pod.spec.volumes = [{ name: 'cache', emptyDir: {} }];
    pod.spec.containers = pod.spec.containers.map((c) => ({ ...c, volumeMounts: [{ name: 'cache', mountPath: '/cache' }] }));
    await apply(pod);
    const writerUid = (await waitForPhase(namespace, name, 'Running')).metadata?.uid ?? '';
    await eventually('the 5 MiB written', async () => ((await kubectl(['exec', '-n', namespace, name, '--', 'ls', '/cache'])).includes('done') ? true : undefined));
    const volumeDir = path.join(CLUSTER_DIR, 'nodelet-root', 'pods', writerUid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    const du = Number((await run('du', ['-s', '-B1', volumeDir])).stdout.split('\t')[0]);
    const stats = await eventually('the writer in the summary', async () => (await summary()).pods.find((p) => p.podRef.uid === writerUid));
    const cache = stats.volume?.find((v) => v.name === 'cache');
    assert.ok(cache !== undefined, `the emptyDir is reported: ${JSON.stringify(stats.volume)}`);
    assert.equal(cache.usedBytes, du, 'usedBytes is what du -s -B1 counts on the node');
    assert.ok((cache.usedBytes ?? 0) >= 5 * 2 ** 20, 'at least the 5 MiB written');
    assert.ok((cache.capacityBytes ?? 0) > (cache.availableBytes ?? 0) && (cache.availableBytes ?? 0) > 0, 'capacity and free space of its filesystem');
    const names = (stats.volume ?? []).map((v) => v.name);
    assert.ok(names.some((n) => n.startsWith('kube-api-access-')), `the projected token volume is reported too: ${names.join(', ')}`);
    const logs = stats.containers.find((c) => c.name === 'main')?.logs;
    assert.ok((logs?.usedBytes ?? 0) > 0 && (logs?.inodesUsed ?? 0) >= 2, `the container's log files: ${JSON.stringify(logs)}`);
    const ephemeral = stats['ephemeral-storage']?.usedBytes ?? 0;
    const volumesTotal = (stats.volume ?? []).reduce((t, v) => t + (v.usedBytes ?? 0), 0);
    assert.ok(ephemeral >= volumesTotal + (logs?.usedBytes ?? 0), 'ephemeral storage counts the volumes and the logs');
    console.log(`volume stats: emptyDir cache ${String(cache.usedBytes)} B (du ${du} B), ${String(cache.inodesUsed)} inodes; volumes ${names.join(', ')}; logs ${String(logs?.usedBytes)} B; pod ephemeral-storage ${ephemeral} B`);
  });

  it('/metrics/resource has the container, pod and node series with timestamps', async () => {
    const text = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics/resource`]);
    const series = (name: string, labels: string): number[] => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
      assert.ok(line !== undefined, `no ${name}${labels} in\n${text}`);
      const [, value = '', stamp = ''] = line.split(' ');
      return [Number(value), Number(stamp)];
    };
    const pod = `namespace="${namespace}",pod="busy"`;
    const [cpu = 0, cpuAt = 0] = series('container_cpu_usage_seconds_total', `{container="main",${pod}}`);
    assert.ok(cpu > 0, 'busy container CPU seconds > 0');
    assert.ok(Math.abs(cpuAt - Date.now()) < 120_000, `timestamp ${cpuAt} is now-ish (ms)`);
    for (const c of ['main', 'idle']) {
      assert.ok((series('container_memory_working_set_bytes', `{container="${c}",${pod}}`)[0] ?? 0) > 0);
      assert.ok((series('container_start_time_seconds', `{container="${c}",${pod}}`)[0] ?? 0) > 1e9);
    }
    assert.ok((series('pod_cpu_usage_seconds_total', `{${pod}}`)[0] ?? 0) >= cpu);
    assert.ok((series('node_memory_working_set_bytes', '')[0] ?? 0) > 0);
    assert.ok((series('node_cpu_usage_seconds_total', '')[0] ?? 0) > 0);
    assert.equal(series('resource_scrape_error', '')[0], 0);
    const containerLines = text.split('\n').filter((l) => l.startsWith('container_') && l.includes(pod));
    assert.equal(containerLines.length, 6, 'two containers, three series each');
    console.log(`metrics/resource: ${text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length} samples; ${containerLines.join('; ')}`);
  });

  it('403 for a token with only nodes/proxy; 200 with nodes/stats and nodes/metrics', async () => {
    await kubectl(['create', 'serviceaccount', 'proxy-only', '-n', namespace]);
    await kubectl(['create', 'serviceaccount', 'stats', '-n', namespace]);
    await kubectl(['create', 'clusterrole', role, '--verb=get', '--resource=nodes/stats,nodes/metrics']);
    await kubectl(['create', 'clusterrolebinding', role, `--clusterrole=${role}`, `--serviceaccount=${namespace}:stats`]);
    await kubectl(['create', 'clusterrole', `${role}-proxy`, '--verb=get', '--resource=nodes/proxy']);
    await kubectl(['create', 'clusterrolebinding', `${role}-proxy`, `--clusterrole=${role}-proxy`, `--serviceaccount=${namespace}:proxy-only`]);
    try {
      const denied = (await kubectl(['create', 'token', 'proxy-only', '-n', namespace, '--duration=10m'])).trim();
      const user = `system:serviceaccount:${namespace}:proxy-only`;
      assert.deepEqual(await curlNode('/stats/summary', denied), { status: 403, body: `Forbidden (user=${user}, verb=get, resource=nodes, subresource=[stats])` });
      assert.deepEqual(await curlNode('/metrics/resource', denied), { status: 403, body: `Forbidden (user=${user}, verb=get, resource=nodes, subresource=[metrics])` });
      // The proxy grant itself works (so the 403s are about stats and metrics, not the token).
      await eventually('200 for /healthz with nodes/proxy', async () => ((await curlNode('/healthz', denied)).status === 200 ? true : undefined), 60_000);
      const allowed = (await kubectl(['create', 'token', 'stats', '-n', namespace, '--duration=10m'])).trim();
      const ok = await eventually('200 for /stats/summary with nodes/stats', async () => {
        const r = await curlNode('/stats/summary', allowed);
        return r.status === 200 ? r : undefined;
      }, 60_000);
      assert.ok((JSON.parse(ok.body) as Summary).pods.some((p) => p.podRef.uid === uid));
      const metrics = await curlNode('/metrics/resource', allowed);
      assert.equal(metrics.status, 200);
      assert.match(metrics.body, /^resource_scrape_error 0$/m);
    } finally {
      await kubectl(['delete', 'clusterrole,clusterrolebinding', `${role}-proxy`, '--ignore-not-found']).catch(() => undefined);
    }
  });
});
