/**
 * End to end: `kubectl top` on the test cluster, i.e. metrics-server (a host process the harness
 * runs, test/cluster/lib/metrics-server.sh) scraping nodelet's `/metrics/resource` over TLS it
 * verifies with the cluster CA, served to kubectl through the API server's aggregation layer.
 * A pod burning CPU (`while :; do :; done` under a 200m limit) and an idle one: `kubectl top pod`
 * lists both, the burner above the idle one; the metrics API has working sets > 0 for both;
 * `kubectl top node` lists the node; the burner's CPU agrees with nodelet's own
 * `/stats/summary` (and the runtime's counter). And the node server's certificate: signed by the
 * cluster CA, which the API server verifies it with (`kubectl logs` works), while a client holding
 * another CA refuses it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_IP, NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, kubectl, requireCluster, waitForPhase } from './helpers.js';

const run = promisify(execFile);
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';
const PKI = path.join(CLUSTER_DIR, 'pki');

interface PodMetrics { metadata: { name: string }; timestamp: string; window: string; containers: { name: string; usage: { cpu: string; memory: string } }[] }
interface SummaryPod { podRef: { name: string; namespace: string }; cpu?: { usageNanoCores?: number; usageCoreNanoSeconds?: number } }

/** A CPU or memory quantity as the metrics API writes it (`123n`, `5m`, `2`, `1234Ki`, `3Mi`) in base units (cores, bytes). */
function quantity(text: string): number {
  const match = /^(\d+)(n|u|m|Ki|Mi|Gi)?$/.exec(text);
  assert.ok(match !== null, `not a quantity: ${text}`);
  const scale: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  return Number(match[1]) * (match[2] === undefined ? 1 : (scale[match[2]] ?? NaN));
}

/**
 * `kubectl top …` rows (no headers) as name → [CPU in millicores, memory in Mi]: a pod's row is
 * `NAME CPU MEMORY`, a node's `NAME CPU CPU% MEMORY MEMORY%`.
 */
async function top(args: readonly string[]): Promise<Map<string, [number, number]>> {
  const rows = new Map<string, [number, number]>();
  for (const line of (await kubectl(['top', ...args, '--no-headers'])).split('\n')) {
    const columns = line.trim().split(/\s+/);
    const [name, cpu] = columns;
    const memory = columns.length === 5 ? columns[3] : columns[2];
    if (name === undefined || name === '' || cpu === undefined || memory === undefined) continue;
    const m = /^(\d+)m$/.exec(cpu);
    const mi = /^(\d+)Mi$/.exec(memory);
    assert.ok(m !== null && mi !== null, `unexpected kubectl top row: ${line}`);
    rows.set(name, [Number(m[1]), Number(mi[1])]);
  }
  return rows;
}

async function summaryPod(namespace: string, name: string): Promise<SummaryPod | undefined> {
  const s = JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/stats/summary`])) as { pods: SummaryPod[] };
  return s.pods.find((p) => p.podRef.namespace === namespace && p.podRef.name === name);
}

/** The running daemon's command line, from the harness's pid file. */
async function commandLine(daemon: string): Promise<string[]> {
  const pid = (await readFile(path.join(CLUSTER_DIR, 'pids', `${daemon}.pid`), 'utf8')).trim();
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
}

/** curl straight to the node server verifying with a CA file: curl's exit code and the HTTP status. */
async function curlNode(caFile: string): Promise<{ exit: number; status: string }> {
  try {
    const { stdout } = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', caFile, `https://${NODE_IP}:10250/healthz`], { timeout: 30_000 });
    return { exit: 0, status: stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    return { exit: failed.code ?? -1, status: failed.stdout ?? '' };
  }
}

describe('kubectl top through metrics-server, and the verified node certificate', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-top');
    const burner = busyboxPod({ name: 'burner', namespace, script: 'while :; do :; done', nodeName: NODE_NAME }) as { spec: { containers: object[] } };
    burner.spec.containers = [{ ...(burner.spec.containers[0] ?? {}), resources: { limits: { cpu: '200m', memory: '64Mi' } } }];
    await apply(burner);
    await apply(busyboxPod({ name: 'idle', namespace, script: 'echo idle-started; exec sleep 3600', nodeName: NODE_NAME }));
    await waitForPhase(namespace, 'burner', 'Running');
    await waitForPhase(namespace, 'idle', 'Running');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('kubectl top pod lists both pods, the burner above the idle one; the metrics API has working sets > 0', async () => {
    const started = Date.now();
    const rows = await eventually('kubectl top pod to list burner and idle', async () => {
      const r = await top(['pod', '-n', namespace]);
      return r.has('burner') && r.has('idle') ? r : undefined;
    }, 90_000);
    const waited = Date.now() - started;
    const [burnerCpu = 0, burnerMi = 0] = rows.get('burner') ?? [];
    const [idleCpu = 0, idleMi = 0] = rows.get('idle') ?? [];
    assert.ok(burnerCpu > idleCpu, `burner ${burnerCpu}m, idle ${idleCpu}m`);
    // The CFS quota holds the burner to 200m; a little over for the window's edges.
    assert.ok(burnerCpu <= 250, `burner ${burnerCpu}m, its limit is 200m`);
    assert.equal(rows.size, 2, `only this namespace's two pods: ${[...rows.keys()].join(', ')}`);
    // kubectl rounds memory down to whole Mi (an idle sleep may show 0Mi): exact bytes from the API.
    const list = JSON.parse(await kubectl(['get', '--raw', `/apis/metrics.k8s.io/v1beta1/namespaces/${namespace}/pods`])) as { items: PodMetrics[] };
    const bytes = new Map(list.items.map((p) => [p.metadata.name, p.containers.reduce((sum, c) => sum + quantity(c.usage.memory), 0)]));
    assert.deepEqual([...bytes.keys()].sort(), ['burner', 'idle']);
    for (const [name, b] of bytes) assert.ok(b > 0, `${name} working set ${b} B`);
    console.log(`kubectl top pod after ${waited} ms: burner ${burnerCpu}m ${burnerMi}Mi, idle ${idleCpu}m ${idleMi}Mi; metrics API working sets: burner ${bytes.get('burner')} B, idle ${bytes.get('idle')} B`);
  });

  it('kubectl top node lists the node', async () => {
    const rows = await eventually('kubectl top node to list the node', async () => {
      const r = await top(['node']);
      return r.has(NODE_NAME) ? r : undefined;
    }, 60_000);
    const [cpu = 0, mi = 0] = rows.get(NODE_NAME) ?? [];
    assert.ok(cpu > 0 && mi > 0, `node ${cpu}m ${mi}Mi`);
    assert.equal(rows.size, 1);
    console.log(`kubectl top node: ${NODE_NAME} ${cpu}m ${mi}Mi`);
  });

  it("the burner's CPU from metrics-server agrees with nodelet's /stats/summary and the runtime's counter", async () => {
    const metrics = JSON.parse(await kubectl(['get', '--raw', `/apis/metrics.k8s.io/v1beta1/namespaces/${namespace}/pods/burner`])) as PodMetrics;
    const fromMetricsServer = quantity(metrics.containers[0]?.usage.cpu ?? '');
    // The summary's rate is between two summaries (nodelet keeps the previous reading): take one,
    // wait one metric resolution (15 s), take the next. The runtime's counter over the same span.
    const id = (await crictl(['ps', '-q', '--state', 'Running', '--label', `io.kubernetes.pod.namespace=${namespace}`, '--label', 'io.kubernetes.pod.name=burner'])).trim();
    assert.match(id, /^[0-9a-f]{64}$/, 'the burner runs in the runtime');
    const runtimeNanos = async (): Promise<[number, number]> => {
      const out = JSON.parse(await crictl(['stats', '-o', 'json', '--id', id])) as { stats: { cpu: { timestamp: string; usageCoreNanoSeconds: { value: string } } }[] };
      const cpu = out.stats[0]?.cpu;
      return [Number(cpu?.usageCoreNanoSeconds.value ?? NaN), Number(cpu?.timestamp ?? NaN)];
    };
    await summaryPod(namespace, 'burner');
    const [n1, t1] = await runtimeNanos();
    await sleep(15_000);
    const pod = await summaryPod(namespace, 'burner');
    const [n2, t2] = await runtimeNanos();
    const fromSummary = (pod?.cpu?.usageNanoCores ?? NaN) / 1e9;
    const fromRuntime = (n2 - n1) / (t2 - t1);
    // All three are rates of the one cgroup counter, over different windows of 10-15 s. The CFS
    // quota holds the burner near 0.2 core in each; what moves it between windows is contention
    // on this shared machine (other suites, builds). 0.05 core absolute, or a third of the
    // larger figure, still catches a unit error, the idle pod's figures or another window's
    // counter taken for a rate (each an order of magnitude or more off).
    const near = (a: number, b: number): boolean => Math.abs(a - b) <= Math.max(0.05, Math.max(a, b) / 3);
    console.log(`burner CPU: metrics-server ${fromMetricsServer.toFixed(3)} core (window ${metrics.window} to ${metrics.timestamp}), /stats/summary ${fromSummary.toFixed(3)} core, crictl stats ${fromRuntime.toFixed(3)} core over ${((t2 - t1) / 1e9).toFixed(1)} s`);
    assert.ok(fromSummary > 0.05 && fromSummary <= 0.3, `summary ${fromSummary} core under a 200m limit`);
    assert.ok(near(fromMetricsServer, fromSummary), `metrics-server ${fromMetricsServer} vs summary ${fromSummary}`);
    assert.ok(near(fromSummary, fromRuntime), `summary ${fromSummary} vs runtime ${fromRuntime}`);
  });

  it("the API server verifies the node server's certificate with the cluster CA: kubectl logs works; another CA is refused", async () => {
    const apiserver = await commandLine('kube-apiserver');
    assert.equal(apiserver[apiserver.indexOf('--kubelet-certificate-authority') + 1], path.join(PKI, 'ca.crt'), 'the API server verifies the node');
    const metricsServer = await commandLine('metrics-server');
    assert.equal(metricsServer[metricsServer.indexOf('--kubelet-certificate-authority') + 1], path.join(PKI, 'ca.crt'), 'metrics-server verifies the node');
    assert.ok(!metricsServer.some((a) => a.startsWith('--kubelet-insecure-tls')), 'no --kubelet-insecure-tls');
    const logs = await eventually('kubectl logs of idle', async () => {
      const out = await kubectl(['logs', '-n', namespace, 'idle']);
      return out.includes('idle-started') ? out : undefined;
    }, 30_000);
    assert.equal(logs, 'idle-started\n');
    // Straight to the node server: the cluster CA verifies it (401: TLS done, no credentials);
    // the front-proxy CA (another CA of this cluster) does not: curl's 60 (peer certificate
    // cannot be authenticated), no HTTP status at all.
    const good = await curlNode(path.join(PKI, 'ca.crt'));
    const wrong = await curlNode(path.join(PKI, 'front-proxy-ca.crt'));
    console.log(`curl the node server with the cluster CA: exit ${good.exit}, HTTP ${good.status}; with the front-proxy CA: exit ${wrong.exit}, HTTP ${wrong.status}`);
    assert.deepEqual(good, { exit: 0, status: '401' });
    assert.deepEqual(wrong, { exit: 60, status: '000' });
  });
});
