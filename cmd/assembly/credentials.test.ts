/**
 * The kubelet's three clients on one connection: with the main client's bucket empty, a heartbeat
 * (Node status, Lease) still goes out at once, events go out from their own bucket, and the next
 * ordinary request waits for its token.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeClient, PatchType } from '../../kube/client.js';
import { apiRateLimiter } from '../../kube/rate-limit.js';
import { KubeTransport } from '../../kube/transport.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { agentClients } from './credentials.js';

describe('agentClients', () => {
  const seen: string[] = [];
  let server: http.Server;
  let port = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('keeps heartbeats out of the rate limit and gives events their own', async () => {
    const clock = createFakeClock();
    const rateLimiter = apiRateLimiter({ qps: 1, burst: 1 }, clock);
    assert.ok(rateLimiter);
    const kube = new KubeClient(new KubeTransport({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }, clock, { rateLimiter }));
    const { heartbeatKube, eventKube } = agentClients(kube, clock);
    await kube.get('/api/v1/pods');
    let next = false;
    const pending = kube.get('/api/v1/nodes').then(() => { next = true; });
    await heartbeatKube.patch('/api/v1/nodes/n/status', {}, PatchType.strategicMerge);
    await heartbeatKube.replace('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', {});
    await eventKube.create('/api/v1/namespaces/default/events', {});
    assert.equal(next, false, 'the ordinary request still waits for its token');
    assert.deepEqual(seen, [
      'GET /api/v1/pods',
      'PATCH /api/v1/nodes/n/status',
      'PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n',
      'POST /api/v1/namespaces/default/events',
    ]);
    await clock.advance(1000);
    await pending;
    assert.equal(seen.at(-1), 'GET /api/v1/nodes');
    kube.close();
  });
});
