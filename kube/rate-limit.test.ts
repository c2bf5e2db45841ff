/**
 * The API rate limit as client-go builds it for the kubelet: one bucket for every group above
 * QPS 0, a bucket of 5 QPS per group-version at QPS 0, none below 0; and the transport holding each
 * request (not a watch) for its token, before sending it, with the wait observed as
 * `rest_client_rate_limiter_duration_seconds` and an abort while waiting sending nothing.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createFakeClock, settle, type FakeClock } from '../test/doubles/fake-clock.js';
import { KubeClient } from './client.js';
import { apiRateLimiter, groupVersionOf, InvalidApiRateLimitsError, type RequestRateLimiter } from './rate-limit.js';
import { KubeTransport, type KubeRateLimitSample, type KubeRequestSample } from './transport.js';

/** Starts one wait per path; the count of those that got their token. */
function waitAll(limiter: RequestRateLimiter, paths: readonly string[]): () => number {
  let passed = 0;
  for (const path of paths) void limiter.wait(path).then(() => passed++);
  return () => passed;
}

describe('apiRateLimiter (client-go with the kubelet’s QPS and burst)', () => {
  it('above QPS 0: one bucket shared by every API group; past the burst, one request per 1/qps', async () => {
    const clock = createFakeClock();
    const limiter = apiRateLimiter({ qps: 50, burst: 100 }, clock);
    assert.ok(limiter);
    const passed = waitAll(limiter, Array.from({ length: 101 }, (_, i) => (i % 2 === 0 ? '/api/v1/pods' : '/apis/coordination.k8s.io/v1/leases')));
    await settle();
    assert.equal(passed(), 100, 'the burst, across groups');
    await clock.advance(19);
    assert.equal(passed(), 100);
    await clock.advance(1);
    assert.equal(passed(), 101, 'the next after 1/50 s');
  });

  it('at QPS 0: 5 QPS per group-version, with the burst given or 10 (rest.DefaultQPS, rest.DefaultBurst)', async () => {
    const clock = createFakeClock();
    const limiter = apiRateLimiter({ qps: 0, burst: 0 }, clock);
    assert.ok(limiter);
    const core = Array.from({ length: 12 }, () => '/api/v1/pods');
    const leases = Array.from({ length: 12 }, () => '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n');
    const passed = waitAll(limiter, [...core, ...leases]);
    await settle();
    assert.equal(passed(), 20, 'a burst of 10 in each group-version');
    await clock.advance(200);
    assert.equal(passed(), 22, 'then 5 QPS in each');
    await clock.advance(200);
    assert.equal(passed(), 24);
    const withBurst = apiRateLimiter({ qps: 0, burst: 3 }, createFakeClock());
    assert.ok(withBurst);
    const three = waitAll(withBurst, Array.from({ length: 5 }, () => '/api/v1/nodes'));
    await settle();
    assert.equal(three(), 3);
  });

  it('below QPS 0: no limit; refuses what client-go refuses', () => {
    assert.equal(apiRateLimiter({ qps: -1, burst: 0 }, createFakeClock()), undefined);
    assert.throws(() => apiRateLimiter({ qps: 50, burst: 0 }, createFakeClock()), InvalidApiRateLimitsError);
    assert.throws(() => apiRateLimiter({ qps: 0, burst: -1 }, createFakeClock()), InvalidApiRateLimitsError);
    assert.throws(() => apiRateLimiter({ qps: Number.NaN, burst: 1 }, createFakeClock()), InvalidApiRateLimitsError);
  });

  it('splits paths by group-version as the typed clientset does', () => {
    assert.equal(groupVersionOf('/api/v1/namespaces/a/pods/b/status'), 'core/v1');
    assert.equal(groupVersionOf('/apis/storage.k8s.io/v1/csidrivers'), 'storage.k8s.io/v1');
    assert.equal(groupVersionOf('/apis/nodelet.dev/v1alpha1/nodeagents/n'), 'nodelet.dev/v1alpha1');
    assert.equal(groupVersionOf('/version'), 'discovery');
  });
});

describe('KubeTransport with a rate limiter (against a local HTTP server)', () => {
  const seen: string[] = [];
  let server: http.Server;
  let port = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
      if (req.url?.includes('watch=true') === true) {
        res.writeHead(200, { 'content-type': 'application/json' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  function limited(clock: FakeClock): { transport: KubeTransport; samples: KubeRequestSample[]; waits: KubeRateLimitSample[] } {
    const samples: KubeRequestSample[] = [];
    const waits: KubeRateLimitSample[] = [];
    const rateLimiter = apiRateLimiter({ qps: 2, burst: 2 }, clock);
    const metrics = { requestDone: (s: KubeRequestSample) => samples.push(s), rateLimited: (s: KubeRateLimitSample) => waits.push(s) };
    const transport = new KubeTransport({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }, clock, { metrics, ...(rateLimiter === undefined ? {} : { rateLimiter }) });
    return { transport, samples, waits };
  }

  it('sends the burst at once and holds the next request until its token is due, observing each wait', async () => {
    seen.length = 0;
    const clock = createFakeClock();
    const { transport, samples, waits } = limited(clock);
    await Promise.all([transport.request({ method: 'GET', path: '/api/v1/a' }), transport.request({ method: 'PUT', path: '/api/v1/b', body: {} })]);
    let third = false;
    const pending = transport.request({ method: 'PATCH', path: '/api/v1/c', body: {} }).then(() => { third = true; });
    await clock.advance(499);
    assert.equal(third, false);
    assert.deepEqual(seen, ['GET /api/v1/a', 'PUT /api/v1/b'], 'the third is not sent before its token');
    await clock.advance(1);
    await pending;
    assert.equal(seen.length, 3);
    assert.deepEqual(waits.map((w) => [w.method, w.seconds]), [['GET', 0], ['PUT', 0], ['PATCH', 0.5]]);
    assert.equal(waits[0]?.host, `127.0.0.1:${port}`);
    assert.ok((samples.find((s) => s.method === 'PATCH')?.seconds ?? 0) >= 0.5, 'request latency counts the wait, as client-go');
    transport.close();
  });

  it('rejects a request aborted while it waits for its token, and never sends it', async () => {
    seen.length = 0;
    const clock = createFakeClock();
    const { transport, samples, waits } = limited(clock);
    await Promise.all([transport.request({ method: 'GET', path: '/api/v1/a' }), transport.request({ method: 'GET', path: '/api/v1/b' })]);
    const controller = new AbortController();
    const aborted = transport.request({ method: 'GET', path: '/api/v1/c', signal: controller.signal });
    await clock.advance(100);
    controller.abort(new Error('informer stopped'));
    await assert.rejects(aborted, /informer stopped/);
    await clock.advance(1000);
    assert.deepEqual(seen, ['GET /api/v1/a', 'GET /api/v1/b']);
    assert.equal(samples.length, 2, 'no request counted');
    assert.equal(waits.at(-1)?.seconds, 0.1, 'the wait is observed');
    transport.close();
  });

  it('opens watches without a token, as client-go', async () => {
    seen.length = 0;
    const clock = createFakeClock();
    const { transport, waits } = limited(clock);
    await Promise.all([transport.request({ method: 'GET', path: '/api/v1/a' }), transport.request({ method: 'GET', path: '/api/v1/b' })]);
    await new Promise<void>((resolve) => {
      void transport.watch('/api/v1/pods', {}, { onEvent: () => undefined, onDone: () => { resolve(); } });
    });
    assert.equal(seen.length, 3, 'the watch went out with the bucket empty');
    assert.equal(waits.length, 2);
    transport.close();
  });

  it('lets a client without a limit (the heartbeats) through an empty bucket, unobserved', async () => {
    seen.length = 0;
    const clock = createFakeClock();
    const { transport, waits } = limited(clock);
    const limitedClient = new KubeClient(transport);
    const heartbeat = limitedClient.withRateLimiter('none');
    await Promise.all([limitedClient.get('/api/v1/a'), limitedClient.get('/api/v1/b')]);
    await heartbeat.patch('/api/v1/nodes/n/status', {}, 'application/strategic-merge-patch+json');
    await heartbeat.replace('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', {});
    assert.equal(seen.length, 4);
    assert.equal(waits.length, 2);
    transport.close();
  });
});
