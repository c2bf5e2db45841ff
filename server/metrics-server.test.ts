/**
 * `/metrics` through the node server over TLS: 403 without `nodes/metrics` (200 with it), the
 * Prometheus content type, and the figures each recorder was fed: runtime operations with their
 * kubelet names, errors and duration buckets; PLEG relist duration and interval; running pods and
 * containers by state; pod start duration; reconcile runs by outcome and retries; the queue's depth
 * read at each scrape (a failing or hanging read logged, the last figures served, still 200); the node name;
 * evictions absent until one happens, then by signal.
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { QueueCounts } from '../controllers/queue/reconcile-queue.js';
import { FakeAccessReviewer, FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import { metricsRoutes } from './metrics-route.js';
import { isTimeoutError } from '../util/timeout.js';
import { QUEUE_READ_TIMEOUT_MS, createNodeMetrics } from './node-metrics.js';
import { createNodeServer, type NodeServer } from './node-server.js';
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

/** The sample lines of `text` whose name starts with `prefix`. */
function samples(text: string, prefix: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(prefix));
}

describe('/metrics through the node server', () => {
  let server: NodeServer;
  let port = 0;
  const clock = createFakeClock();
  const metrics = createNodeMetrics({ nodeName: 'node-1', clock });
  let counts: QueueCounts | Error = { waiting: 3, active: 1, delayed: 2, failed: 9, completed: 40 };
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(line); } });
  const tokens = new FakeTokenReviewer(new Map([['metrics', { name: 'scraper', groups: [] }], ['proxy', { name: 'other', groups: [] }]]));
  const access = new FakeAccessReviewer((a) => (a.user.name === 'scraper' && a.subresource === 'metrics') || (a.user.name === 'other' && a.subresource === 'proxy'));

  before(async () => {
    metrics.watchQueue({ counts: () => (counts instanceof Error ? Promise.reject(counts) : Promise.resolve(counts)) });
    server = createNodeServer({ address: '127.0.0.1', port: 0, certPem: serving.certPem, keyPem: serving.keyPem, authenticator: new Authenticator(tokens, clock), authorizer: new NodeAuthorizer(access, 'node-1', clock), routes: metricsRoutes(metrics, logger), logger: pino({ level: 'silent' }), metrics: metrics.http });
    port = await server.start();
  });

  after(async () => {
    await server.stop();
  });

  it('is nodes/metrics: 403 for a user with only nodes/proxy', async () => {
    const denied = await get(port, '/metrics', 'proxy');
    assert.equal(denied.status, 403);
    assert.match(denied.body, /subresource=\[metrics\]/);
  });

  it('serves every recorded figure under the kubelet names, in the text format', async () => {
    metrics.cri.operation({ operation: 'run_podsandbox', seconds: 0.3, failed: false });
    metrics.cri.operation({ operation: 'container_status', seconds: 0.001, failed: true });
    metrics.cri.operation({ operation: 'container_status', seconds: 0.002, failed: false });
    metrics.pleg.relisted({ durationSeconds: 0.02, startedAtMs: 1_700_000_000_500, counts: { runningPods: 2, containersByState: { created: 0, running: 3, exited: 1, unknown: 0 } } });
    metrics.pleg.relisted({ durationSeconds: 0.03, intervalSeconds: 1.01, startedAtMs: 1_700_000_001_500 });
    metrics.podStarts.podStarted(2.5);
    metrics.runs.runFinished({ outcome: 'success', seconds: 0.4, retry: false });
    metrics.runs.runFinished({ outcome: 'error', seconds: 0.1, retry: true });
    const reply = await get(port, '/metrics', 'metrics');
    assert.equal(reply.status, 200);
    assert.equal(reply.type, 'text/plain; version=0.0.4; charset=utf-8');
    const text = reply.body;
    assert.deepEqual(samples(text, 'kubelet_runtime_operations_total'), ['kubelet_runtime_operations_total{operation_type="container_status"} 2', 'kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1']);
    assert.deepEqual(samples(text, 'kubelet_runtime_operations_errors_total'), ['kubelet_runtime_operations_errors_total{operation_type="container_status"} 1']);
    assert.ok(text.includes('kubelet_runtime_operations_duration_seconds_bucket{operation_type="run_podsandbox",le="0.078125"} 0\n'));
    assert.ok(text.includes('kubelet_runtime_operations_duration_seconds_bucket{operation_type="run_podsandbox",le="0.1953125"} 0\n'));
    assert.ok(text.includes('kubelet_runtime_operations_duration_seconds_bucket{operation_type="run_podsandbox",le="0.48828125"} 1\n'));
    assert.ok(text.includes('kubelet_runtime_operations_duration_seconds_count{operation_type="run_podsandbox"} 1\n'));
    assert.ok(text.includes('# TYPE kubelet_runtime_operations_duration_seconds histogram\n'));
    assert.deepEqual(samples(text, 'kubelet_pleg_relist_duration_seconds_count'), ['kubelet_pleg_relist_duration_seconds_count 2']);
    assert.deepEqual(samples(text, 'kubelet_pleg_relist_interval_seconds_count'), ['kubelet_pleg_relist_interval_seconds_count 1']);
    assert.deepEqual(samples(text, 'kubelet_pleg_relist_interval_seconds_sum'), ['kubelet_pleg_relist_interval_seconds_sum 1.01']);
    assert.deepEqual(samples(text, 'kubelet_running_pods'), ['kubelet_running_pods 2'], 'a failed relist leaves the last counts');
    assert.deepEqual(samples(text, 'kubelet_pleg_last_seen_seconds '), ['kubelet_pleg_last_seen_seconds 1.7e+09'], 'the start of the last successful relist, in whole seconds');
    assert.deepEqual(samples(text, 'kubelet_pleg_discard_events '), ['kubelet_pleg_discard_events 0']);
    assert.deepEqual(samples(text, 'kubelet_running_containers'), [
      'kubelet_running_containers{container_state="created"} 0',
      'kubelet_running_containers{container_state="exited"} 1',
      'kubelet_running_containers{container_state="running"} 3',
      'kubelet_running_containers{container_state="unknown"} 0',
    ]);
    assert.ok(text.includes('kubelet_pod_start_duration_seconds_bucket{le="2"} 0\nkubelet_pod_start_duration_seconds_bucket{le="3"} 1\n'));
    assert.deepEqual(samples(text, 'kubelet_pod_start_duration_seconds_count'), ['kubelet_pod_start_duration_seconds_count 1']);
    assert.deepEqual(samples(text, 'nodelet_reconcile_job_duration_seconds_count'), ['nodelet_reconcile_job_duration_seconds_count{outcome="error"} 1', 'nodelet_reconcile_job_duration_seconds_count{outcome="success"} 1']);
    assert.deepEqual(samples(text, 'nodelet_reconcile_retries_total'), ['nodelet_reconcile_retries_total 1']);
    assert.deepEqual(samples(text, 'nodelet_reconcile_queue_jobs'), ['nodelet_reconcile_queue_jobs{state="active"} 1', 'nodelet_reconcile_queue_jobs{state="delayed"} 2', 'nodelet_reconcile_queue_jobs{state="waiting"} 3']);
    assert.deepEqual(samples(text, 'kubelet_node_name'), ['kubelet_node_name{node="node-1"} 1']);
    assert.ok(text.includes('# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox\n'));
    assert.deepEqual(samples(text, 'kubelet_evictions'), [], 'no eviction, no series (as the kubelet)');
    assert.deepEqual(samples(text, 'kubelet_image_garbage_collected_total'), [], 'no image collected, no series (as the kubelet)');
    assert.deepEqual(samples(text, 'kubelet_lifecycle_handler_http_fallbacks_total'), ['kubelet_lifecycle_handler_http_fallbacks_total 0'], 'a counter without labels starts at 0, as the kubelet\'s');
    const names = samples(text, '# TYPE').map((l) => l.split(' ')[2] ?? '');
    assert.deepEqual(names, [...names].sort(), 'families sorted by name');
  });

  it('a queue read that fails is logged and its last figures served; evictions appear by signal', async () => {
    counts = new Error('redis down');
    metrics.evictions.evicted('memory.available');
    metrics.evictions.evicted('memory.available');
    metrics.lifecycle.httpFallback();
    metrics.imageGc.imageRemoved('age');
    metrics.imageGc.imageRemoved('space');
    metrics.imageGc.imageRemoved('age');
    const reply = await get(port, '/metrics', 'metrics');
    assert.equal(reply.status, 200);
    assert.deepEqual(samples(reply.body, 'nodelet_reconcile_queue_jobs{state="waiting"}'), ['nodelet_reconcile_queue_jobs{state="waiting"} 3']);
    assert.equal(warnings.filter((w) => w.includes('a metrics collector failed')).length, 1);
    assert.deepEqual(samples(reply.body, 'kubelet_evictions{'), ['kubelet_evictions{eviction_signal="memory.available"} 2']);
    assert.deepEqual(samples(reply.body, 'kubelet_lifecycle_handler_http_fallbacks_total'), ['kubelet_lifecycle_handler_http_fallbacks_total 1']);
    assert.deepEqual(samples(reply.body, 'kubelet_image_garbage_collected_total{'), ['kubelet_image_garbage_collected_total{reason="age"} 2', 'kubelet_image_garbage_collected_total{reason="space"} 1']);
    counts = { waiting: 0, active: 0, delayed: 5, failed: 0, completed: 0 };
    // Straight to the registry: a read that never answers is given up after 2 s of the clock.
    let hang = true;
    const hanging = createNodeMetrics({ nodeName: 'node-1', clock });
    hanging.watchQueue({ counts: () => (hang ? new Promise<QueueCounts>(() => undefined) : Promise.resolve({ waiting: 1, active: 0, delayed: 0, failed: 0, completed: 0 })) });
    hang = false;
    assert.deepEqual(samples(await hanging.expose(), 'nodelet_reconcile_queue_jobs{state="waiting"}'), ['nodelet_reconcile_queue_jobs{state="waiting"} 1']);
    hang = true;
    const errors: unknown[] = [];
    const pending = hanging.expose((e) => errors.push(e));
    await clock.advance(QUEUE_READ_TIMEOUT_MS);
    assert.deepEqual(samples(await pending, 'nodelet_reconcile_queue_jobs{state="waiting"}'), ['nodelet_reconcile_queue_jobs{state="waiting"} 1'], 'the last figures, not a hung scrape');
    assert.ok(errors.length === 1 && isTimeoutError(errors[0]));
    assert.deepEqual(samples((await get(port, '/metrics', 'metrics')).body, 'nodelet_reconcile_queue_jobs{state="delayed"}'), ['nodelet_reconcile_queue_jobs{state="delayed"} 5']);
  });

  it('counts the server’s own requests as the kubelet does: earlier scrapes, a refusal, this scrape in flight', async () => {
    const before = samples((await get(port, '/metrics', 'metrics')).body, 'kubelet_http_requests_total{long_running="false",method="GET",path="metrics",server_type="readwrite"}')[0];
    const n = Number(before?.split(' ')[1]);
    await get(port, '/metrics', 'proxy');
    const body = (await get(port, '/metrics', 'metrics')).body;
    const labels = '{long_running="false",method="GET",path="metrics",server_type="readwrite"}';
    assert.deepEqual(samples(body, `kubelet_http_requests_total${labels}`), [`kubelet_http_requests_total${labels} ${String(n + 2)}`], 'the refused request counts too: it is counted before authentication');
    assert.deepEqual(samples(body, `kubelet_http_inflight_requests${labels}`), [`kubelet_http_inflight_requests${labels} 1`], 'the scrape itself');
    assert.equal(samples(body, `kubelet_http_requests_duration_seconds_count${labels}`)[0], `kubelet_http_requests_duration_seconds_count${labels} ${String(n + 1)}`);
  });
});
