/**
 * `rest_client_*` through nodelet's own API client: a real transport against a local HTTP server
 * records each request by code, method and host, its latency and sizes by verb and host; a watch
 * only in the request count; a request that got no answer with code `<error>`; each rate-limited
 * request's wait for its token.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { apiRateLimiter } from '../kube/rate-limit.js';
import { KubeTransport } from '../kube/transport.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { MetricsRegistry } from '../util/metrics.js';
import { restClientMetrics } from './rest-client-metrics.js';

function line(text: string, prefix: string): string | undefined {
  return text.split('\n').find((l) => l.startsWith(prefix));
}

describe('rest_client metrics', () => {
  let server: Server;
  let host = '';
  before(async () => {
    server = createServer((req, res) => {
      if (req.url?.includes('watch=true') === true) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('');
        return;
      }
      const found = req.url?.startsWith('/api/v1/nodes/here') === true;
      req.resume();
      req.on('end', () => {
        res.writeHead(found ? (req.method === 'POST' ? 201 : 200) : 404, { 'Content-Type': 'application/json' });
        res.end(found ? '{"kind":"Node"}' : '{"kind":"Status","code":404}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${String((server.address() as AddressInfo).port)}`;
  });
  after(() => {
    server.close();
  });

  it('counts requests by code, method and host; latency and sizes by verb and host; a watch in the count only', async () => {
    const registry = new MetricsRegistry();
    const transport = new KubeTransport({ server: `http://${host}`, insecureSkipTlsVerify: false }, undefined, { metrics: restClientMetrics(registry) });
    await transport.request({ method: 'GET', path: '/api/v1/nodes/here' });
    await transport.request({ method: 'POST', path: '/api/v1/nodes/here', body: { a: 1 } });
    await assert.rejects(transport.request({ method: 'GET', path: '/api/v1/nodes/gone' }));
    await new Promise<void>((resolve) => {
      void transport.watch('/api/v1/pods', {}, { onEvent: () => undefined, onDone: () => { resolve(); } });
    });
    transport.close();
    const text = registry.text();
    assert.equal(line(text, `rest_client_requests_total{code="200",host="${host}",method="GET"}`)?.split(' ')[1], '2', 'the GET and the watch');
    assert.equal(line(text, `rest_client_requests_total{code="201",host="${host}",method="POST"}`)?.split(' ')[1], '1');
    assert.equal(line(text, `rest_client_requests_total{code="404",host="${host}",method="GET"}`)?.split(' ')[1], '1');
    assert.equal(line(text, `rest_client_request_duration_seconds_count{host="${host}",verb="GET"}`)?.split(' ')[1], '2', 'no latency for the watch');
    assert.equal(line(text, `rest_client_request_size_bytes_sum{host="${host}",verb="POST"}`)?.split(' ')[1], String(JSON.stringify({ a: 1 }).length));
    assert.equal(line(text, `rest_client_request_size_bytes_sum{host="${host}",verb="GET"}`)?.split(' ')[1], '0');
    assert.equal(line(text, `rest_client_response_size_bytes_sum{host="${host}",verb="GET"}`)?.split(' ')[1], String('{"kind":"Node"}'.length + '{"kind":"Status","code":404}'.length));
    assert.match(text, /rest_client_request_duration_seconds_bucket\{host="[^"]+",verb="GET",le="0.005"\}/);
  });

  it("observes each rate-limited request's wait for its token by verb and host, as client-go's rest_client_rate_limiter_duration_seconds", async () => {
    const registry = new MetricsRegistry();
    const clock = createFakeClock();
    const rateLimiter = apiRateLimiter({ qps: 1, burst: 1 }, clock);
    assert.ok(rateLimiter);
    const transport = new KubeTransport({ server: `http://${host}`, insecureSkipTlsVerify: false }, clock, { metrics: restClientMetrics(registry), rateLimiter });
    await transport.request({ method: 'GET', path: '/api/v1/nodes/here' });
    const second = transport.request({ method: 'GET', path: '/api/v1/nodes/here' });
    await clock.advance(1000);
    await second;
    await transport.request({ method: 'PATCH', path: '/api/v1/nodes/here', body: {}, rateLimiter: 'none' });
    transport.close();
    const text = registry.text();
    assert.match(text, /# HELP rest_client_rate_limiter_duration_seconds \[ALPHA\] Client side rate limiter latency in seconds. Broken down by verb, and host./);
    assert.equal(line(text, `rest_client_rate_limiter_duration_seconds_count{host="${host}",verb="GET"}`)?.split(' ')[1], '2');
    assert.equal(line(text, `rest_client_rate_limiter_duration_seconds_sum{host="${host}",verb="GET"}`)?.split(' ')[1], '1', 'one waited 1 s, the other nothing');
    assert.equal(line(text, `rest_client_rate_limiter_duration_seconds_bucket{host="${host}",verb="GET",le="0.005"}`)?.split(' ')[1], '1');
    assert.equal(line(text, `rest_client_rate_limiter_duration_seconds_count{host="${host}",verb="PATCH"}`), undefined, 'a request not limited is not observed');
  });

  it('counts a request with no answer as <error>', async () => {
    const registry = new MetricsRegistry();
    const transport = new KubeTransport({ server: 'http://127.0.0.1:1', insecureSkipTlsVerify: false }, undefined, { metrics: restClientMetrics(registry) });
    await assert.rejects(transport.request({ method: 'DELETE', path: '/api/v1/nodes/x' }));
    const text = registry.text();
    assert.equal(line(text, 'rest_client_requests_total{code="<error>",host="127.0.0.1:1",method="DELETE"}')?.split(' ')[1], '1');
    assert.equal(line(text, 'rest_client_response_size_bytes_count'), undefined, 'no answer, no response size');
  });
});
