import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { createHealthzServer, type HealthCheck, type HealthzServer } from './healthz-server.js';

const logger = pino({ level: 'silent' });

async function get(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${String(port)}${path}`, { method });
  return { status: response.status, body: await response.text() };
}

/** A check whose failure the test sets. */
function switchable(name: string): HealthCheck & { fail: string | undefined } {
  const check = { name, fail: undefined as string | undefined, failure: () => check.fail };
  return check;
}

async function listening(server: HealthzServer): Promise<number> {
  for (let i = 0; i < 200; i += 1) {
    const port = server.port();
    if (port !== undefined) return port;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail('never listening');
}

describe('healthz server', () => {
  const servers: HealthzServer[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('answers /healthz from the liveness checks and /readyz from both, listing each as the Kubernetes components do', async () => {
    const live = switchable('syncloop');
    const ready = switchable('pod-source');
    const server = createHealthzServer({ address: '127.0.0.1', port: 0, liveness: [{ name: 'ping', failure: () => undefined }, live], readiness: [ready], clock: createFakeClock(0), logger });
    servers.push(server);
    server.start();
    const port = await listening(server);
    assert.deepEqual(await get(port, '/healthz'), { status: 200, body: '[+]ping ok\n[+]syncloop ok\nhealthz check passed\n' });
    ready.fail = 'not synced';
    assert.deepEqual(await get(port, '/healthz'), { status: 200, body: '[+]ping ok\n[+]syncloop ok\nhealthz check passed\n' }, 'readiness does not touch liveness');
    assert.deepEqual(await get(port, '/readyz'), { status: 500, body: '[+]ping ok\n[+]syncloop ok\n[-]pod-source failed: not synced\nreadyz check failed\n' });
    live.fail = 'stalled 130s';
    assert.equal((await get(port, '/healthz')).status, 500);
    assert.match((await get(port, '/healthz')).body, /\[-\]syncloop failed: stalled 130s\nhealthz check failed\n$/);
    assert.equal((await get(port, '/metrics')).status, 404);
    assert.equal((await get(port, '/healthz', 'POST')).status, 404);
  });

  it('keeps trying a port that is taken, without failing the agent, and serves once it is free', async () => {
    const holder = http.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const taken = (holder.address() as AddressInfo).port;
    const clock = createFakeClock(0);
    const server = createHealthzServer({ address: '127.0.0.1', port: taken, liveness: [], readiness: [], clock, logger });
    servers.push(server);
    server.start();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(server.port(), undefined);
    await new Promise<void>((resolve) => holder.close(() => { resolve(); }));
    await clock.advance(5000);
    assert.equal(await listening(server), taken);
    assert.equal((await get(taken, '/healthz')).status, 200);
  });
});
