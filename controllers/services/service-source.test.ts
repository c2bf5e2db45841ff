/**
 * The service source against a local HTTP server that refuses every list (an API server coming
 * back from a restart): the informer restarts after 1 s, 2 s, … each spread by the random source
 * over [d, 2d), as client-go's reflector jitters its backoff, and stays unsynced meanwhile.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { KubeClient } from '../../kube/client.js';
import { KubeTransport } from '../../kube/transport.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { createServiceSource } from './service-source.js';

describe('service source restarts', () => {
  let lists = 0;
  let server: http.Server;
  let port = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url?.startsWith('/api/v1/services') === true) lists += 1;
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** Waits (real time) until the server has seen `n` lists. */
  async function listed(n: number): Promise<void> {
    for (let i = 0; i < 200 && lists < n; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(lists, n);
  }

  it('restarts a failed informer after jittered delays in [d, 2d)', async () => {
    const clock = createFakeClock();
    const kube = new KubeClient(new KubeTransport({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }, clock));
    const draws = [0.5, 0.9];
    const source = createServiceSource({ kube, logger: pino({ level: 'silent' }), clock, random: () => draws.shift() ?? 0 });
    await source.start();
    await listed(1);
    assert.equal(clock.nextTimerIn(), 1500, '1 s × (1 + 0.5)');
    await clock.advance(1500);
    await listed(2);
    assert.equal(clock.nextTimerIn(), 3800, '2 s × (1 + 0.9)');
    assert.equal(source.hasSynced(), false);
    source.stop();
    assert.equal(clock.pendingTimers(), 0);
    kube.close();
  });
});
