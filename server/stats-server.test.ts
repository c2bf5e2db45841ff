/**
 * `/stats/summary` and `/metrics/resource` through the node server over TLS, with a stub runtime
 * and node readers: the Summary's shape (node, the ready pod with exactly its running containers,
 * sums per pod), usageNanoCores only from the second summary, the Prometheus exposition with
 * timestamps, the 403 without nodes/stats or nodes/metrics, and a failing runtime (500 for the
 * summary, the error gauges at 1 for the scrape).
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { Container, ContainerStats, PodSandbox } from '../cri/types.js';
import { FakeAccessReviewer, FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import type { NodeReading } from './node-stats.js';
import { StatsCollector, type StatsSource } from './stats-collector.js';
import { statsRoutes } from './stats-routes.js';
import type { Summary } from './summary.js';
import { makeCertificate } from '../kube/certificates/x509.js';

const now = new Date();
const serving = makeCertificate({ subject: { commonName: 'node-1' }, altNames: ['127.0.0.1'], usages: ['serverAuth'], isCa: true, notBefore: now, notAfter: new Date(Date.now() + 3600_000) });

function get(port: number, urlPath: string, token: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, ca: serving.certPem, headers: { Authorization: `Bearer ${token}` }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: Buffer.concat(chunks).toString() });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const S = 1_000_000_000n;
const T0 = 1_900_000_000n * S;
const sandbox = (id: string, name: string, state: PodSandbox['state']): PodSandbox => ({ id, metadata: { name, namespace: 'ns', uid: `uid-${name}`, attempt: 0 }, state, createdAt: T0, labels: {}, annotations: {}, runtimeHandler: '' });
const container = (id: string, sandboxId: string, name: string, state: Container['state']): Container => ({ id, podSandboxId: sandboxId, metadata: { name, attempt: 0 }, image: { image: 'x' }, imageRef: 'x', state, createdAt: T0 + 5n * S, labels: {}, annotations: {} });
const stats = (id: string, name: string, at: bigint, [cpuSeconds, workingSet]: readonly [bigint, bigint]): ContainerStats => ({
  id,
  name,
  labels: {},
  cpu: { timestamp: at, usageCoreNanoSeconds: cpuSeconds * S, usageNanoCores: undefined },
  memory: { timestamp: at, workingSetBytes: workingSet, availableBytes: undefined, usageBytes: workingSet + 100n, rssBytes: 10n, pageFaults: 1n, majorPageFaults: 0n },
  writableLayer: { timestamp: at, mountpoint: '', usedBytes: 4096n, inodesUsed: 2n },
  swap: { timestamp: at, availableBytes: 1000n, usageBytes: workingSet / 10n },
});

class StubStats implements StatsSource {
  at = T0 + 10n * S;
  busy = 1n;
  fail: Error | undefined;
  listPodSandbox = (): Promise<PodSandbox[]> => Promise.resolve([sandbox('s1', 'web', 'SANDBOX_READY'), sandbox('s0', 'old', 'SANDBOX_NOTREADY')]);
  listContainers = (): Promise<Container[]> =>
    Promise.resolve([container('c1', 's1', 'app', 'CONTAINER_RUNNING'), container('c2', 's1', 'side', 'CONTAINER_RUNNING'), container('c3', 's1', 'app', 'CONTAINER_EXITED'), container('c4', 's0', 'x', 'CONTAINER_RUNNING')]);
  listContainerStats = (): Promise<ContainerStats[]> =>
    this.fail !== undefined ? Promise.reject(this.fail) : Promise.resolve([stats('c1', 'app', this.at, [this.busy, 1000n]), stats('c2', 'side', this.at, [2n, 500n]), stats('c3', 'app', this.at, [9n, 9n])]);
}

const nodeReading = (cpuSeconds: bigint): NodeReading => ({
  bootTimeSeconds: 1_800_000_000,
  usageCoreNanoSeconds: cpuSeconds * S,
  memory: { capacityBytes: 8000n, usageBytes: 5000n, workingSetBytes: 3000n, rssBytes: 100n, pageFaults: 7n, majorPageFaults: 1n },
  rlimit: { maxpid: 4194304, curproc: 300 },
  swap: { usageBytes: 64n, availableBytes: 960n },
});

describe('/stats/summary and /metrics/resource through the node server', () => {
  let server: NodeServer;
  let port = 0;
  const clock = createFakeClock(Number((T0 + 10n * S) / 1_000_000n));
  const runtime = new StubStats();
  let nodeCpu = 100n;
  const fs = { capacityBytes: 1000, availableBytes: 400, usedBytes: 500, inodes: 50, inodesFree: 20, inodesUsed: 30 };
  const tokens = new FakeTokenReviewer(new Map([['stats', { name: 'reader', groups: [] }], ['nostats', { name: 'other', groups: [] }]]));
  const access = new FakeAccessReviewer((a) => a.user.name === 'reader' && (a.subresource === 'stats' || a.subresource === 'metrics'));

  before(async () => {
    const collector = new StatsCollector({
      nodeName: 'node-1',
      rootDir: '/root-dir',
      runtime,
      images: { imageFsInfo: () => Promise.resolve([{ timestamp: T0, mountpoint: '/images', usedBytes: 123n, inodesUsed: 4n }]) },
      clock,
      readNode: () => Promise.resolve(nodeReading(nodeCpu)),
      readFs: () => Promise.resolve(fs),
    });
    server = createNodeServer({ address: '127.0.0.1', port: 0, certPem: serving.certPem, keyPem: serving.keyPem, authenticator: new Authenticator(tokens, clock), authorizer: new NodeAuthorizer(access, 'node-1', clock), routes: statsRoutes(collector, pino({ level: 'silent' })), logger: pino({ level: 'silent' }) });
    port = await server.start();
  });

  after(async () => {
    await server.stop();
  });

  it('a summary lists the node and the ready pod with exactly its running containers; nanocores from the second summary on', async () => {
    const first = await get(port, '/stats/summary', 'stats');
    assert.equal(first.status, 200);
    assert.equal(first.type, 'application/json');
    const one = JSON.parse(first.body) as Summary;
    assert.equal(one.node.nodeName, 'node-1');
    assert.equal(one.node.startTime, '2027-01-15T08:00:00Z');
    assert.deepEqual(one.node.memory, { time: '2030-03-17T17:46:50Z', availableBytes: 5000, usageBytes: 5000, workingSetBytes: 3000, rssBytes: 100, pageFaults: 7, majorPageFaults: 1 });
    assert.deepEqual(one.node.runtime.imageFs, { time: '2030-03-17T17:46:50Z', ...fs, usedBytes: 123, inodesUsed: 4 });
    assert.equal(one.node.cpu.usageNanoCores, undefined);
    assert.deepEqual(one.pods.map((p) => [p.podRef, p.containers.map((c) => c.name)]), [[{ name: 'web', namespace: 'ns', uid: 'uid-web' }, ['app', 'side']]]);
    const pod = one.pods[0];
    assert.deepEqual(pod?.memory, { time: '2030-03-17T17:46:50Z', usageBytes: 1700, workingSetBytes: 1500, rssBytes: 20 });
    assert.equal(pod?.cpu?.usageCoreNanoSeconds, 3e9);
    assert.equal(pod?.cpu?.usageNanoCores, undefined);
    // The pod's ephemeral storage on the node filesystem: writable layers here (no volumes or logs under these directories).
    assert.deepEqual(pod?.['ephemeral-storage'], { time: '2030-03-17T17:46:50Z', capacityBytes: 1000, availableBytes: 400, inodes: 50, inodesFree: 20, usedBytes: 8192, inodesUsed: 4 });
    assert.equal(pod?.volume, undefined, 'no volume directories, no volume figures');

    // 2 s later: app used 1 more CPU-second (half a core), side none; the node 3 (1.5 cores).
    runtime.at += 2n * S;
    runtime.busy += 1n;
    nodeCpu += 3n;
    await clock.advance(2000);
    const two = JSON.parse((await get(port, '/stats/summary', 'stats')).body) as Summary;
    assert.equal(two.node.cpu.usageNanoCores, 1_500_000_000);
    const [app, side] = two.pods[0]?.containers ?? [];
    assert.equal(app?.cpu?.usageNanoCores, 500_000_000);
    assert.equal(side?.cpu?.usageNanoCores, 0);
    assert.equal(two.pods[0]?.cpu?.usageNanoCores, 500_000_000);
  });

  it('/metrics/resource: the series with the figures and the time they were taken, families sorted', async () => {
    const reply = await get(port, '/metrics/resource', 'stats');
    assert.equal(reply.status, 200);
    assert.equal(reply.type, 'text/plain; version=0.0.4; charset=utf-8');
    const ms = String(Number((runtime.at) / 1_000_000n));
    const lines = reply.body.split('\n');
    for (const want of [
      `container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 2 ${ms}`,
      `container_memory_working_set_bytes{container="side",namespace="ns",pod="web"} 500 ${ms}`,
      `container_start_time_seconds{container="app",namespace="ns",pod="web"} 1900000005 1900000005000`,
      `pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 4 ${ms}`,
      `pod_memory_working_set_bytes{namespace="ns",pod="web"} 1500 ${ms}`,
      'node_memory_working_set_bytes 3000 1900000012000',
      'node_cpu_usage_seconds_total 103 1900000012000',
      // Swap: the runtime's per container, summed for the pod, the node's from meminfo; limit = available + used.
      `container_swap_usage_bytes{container="side",namespace="ns",pod="web"} 50 ${ms}`,
      `container_swap_limit_bytes{container="side",namespace="ns",pod="web"} 1050 ${ms}`,
      `pod_swap_usage_bytes{namespace="ns",pod="web"} 150 ${ms}`,
      'node_swap_usage_bytes 64 1900000012000',
      'resource_scrape_error 0',
      'scrape_error 0',
      '# TYPE container_cpu_usage_seconds_total counter',
    ]) assert.ok(lines.includes(want), `missing ${want} in\n${reply.body}`);
    // Only running containers of ready sandboxes: 2 containers x 5 series.
    assert.equal(lines.filter((l) => l.startsWith('container_')).length, 10);
    const families = lines.filter((l) => l.startsWith('# TYPE')).map((l) => l.split(' ')[2] ?? '');
    assert.deepEqual(families, [...families].sort());
  });

  it('a metrics scrape does not move the CPU readings forward: the next summary rate spans from the last summary', async () => {
    // 2 s busy (one core), scraped; then 2 s idle. Over the 4 s since the last summary: half a core.
    runtime.at += 2n * S;
    runtime.busy += 2n;
    await clock.advance(2000);
    assert.equal((await get(port, '/metrics/resource', 'stats')).status, 200);
    runtime.at += 2n * S;
    await clock.advance(2000);
    const summary = JSON.parse((await get(port, '/stats/summary', 'stats')).body) as Summary;
    assert.equal(summary.pods[0]?.containers[0]?.cpu?.usageNanoCores, 500_000_000);
  });

  it('only_cpu_and_memory: times, CPU and memory only', async () => {
    const reply = JSON.parse((await get(port, '/stats/summary?only_cpu_and_memory=true', 'stats')).body) as Summary;
    assert.deepEqual(Object.keys(reply.node).sort(), ['cpu', 'memory', 'nodeName', 'startTime']);
    assert.deepEqual(Object.keys(reply.pods[0] ?? {}).sort(), ['containers', 'cpu', 'memory', 'podRef', 'startTime']);
    assert.deepEqual(Object.keys(reply.pods[0]?.containers[0] ?? {}).sort(), ['cpu', 'memory', 'name', 'startTime']);
    assert.equal(reply.pods[0]?.containers[0]?.cpu?.usageNanoCores, 500_000_000);
  });

  it('403 without nodes/stats or nodes/metrics, and nothing read', async () => {
    const asked = access.asked.length;
    assert.deepEqual(await get(port, '/stats/summary', 'nostats'), { status: 403, type: 'text/plain; charset=utf-8', body: 'Forbidden (user=other, verb=get, resource=nodes, subresource=[stats])' });
    assert.equal((await get(port, '/metrics/resource', 'nostats')).status, 403);
    assert.deepEqual(access.asked.slice(asked).map((a) => a.subresource), ['stats', 'metrics']);
  });

  it('a runtime that fails: the summary is a 500, the scrape reports its error gauges at 1', async () => {
    runtime.fail = new Error('runtime down');
    const summary = await get(port, '/stats/summary', 'stats');
    assert.equal(summary.status, 500);
    assert.match(summary.body, /runtime down/);
    const metrics = await get(port, '/metrics/resource', 'stats');
    assert.equal(metrics.status, 200);
    assert.ok(metrics.body.split('\n').includes('resource_scrape_error 1'));
    assert.ok(!metrics.body.includes('container_'));
    runtime.fail = undefined;
  });
});
