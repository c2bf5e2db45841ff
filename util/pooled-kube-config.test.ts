import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from './pooled-kube-config.js';

/** A fake API server that answers every request with an empty pod list and counts connections. */
function startServer(): Promise<{ server: Server; url: string; connections: () => number; requests: () => number }> {
  let connections = 0;
  let requests = 0;
  const server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  server.on('connection', () => {
    connections += 1;
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, connections: () => connections, requests: () => requests });
    });
  });
}

function load(config: KubeConfig, server: string, token: string): void {
  // skipTLSVerify: the only way client-node accepts a plain-http server; it still builds a pool per request.
  config.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
}

async function listTimes(config: KubeConfig, times: number): Promise<void> {
  const api = config.makeApiClient(CoreV1Api);
  for (let i = 0; i < times; i++) {
    await api.listNamespacedPod({ namespace: 'default' });
    // Lets the pool see the response end, so the connection is idle (reusable) for the next request.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('PooledKubeConfig', () => {
  let fake: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    fake = await startServer();
  });
  after(() => {
    fake.server.closeAllConnections();
    fake.server.close();
  });

  it('client-node alone opens a connection per request (why the pool exists)', async () => {
    const plain = new KubeConfig();
    load(plain, fake.url, 't');
    const [c0, r0] = [fake.connections(), fake.requests()];
    await listTimes(plain, 5);
    assert.equal(fake.requests() - r0, 5);
    assert.equal(fake.connections() - c0, 5);
  });

  it('sends every request of the same credentials over one kept-alive connection', async () => {
    const pooled = new PooledKubeConfig();
    load(pooled, fake.url, 't');
    const [c0, r0] = [fake.connections(), fake.requests()];
    await listTimes(pooled, 5);
    assert.equal(fake.requests() - r0, 5);
    assert.equal(fake.connections() - c0, 1);
    await pooled.closePool();
  });

  it('keeps the pool when only the bearer token changes, and still sends the new token', async () => {
    const pooled = new PooledKubeConfig();
    load(pooled, fake.url, 'first');
    const seen: string[] = [];
    const record = (req: { headers: Record<string, string | string[] | undefined> }): void => {
      seen.push(String(req.headers.authorization));
    };
    fake.server.on('request', record);
    try {
      const c0 = fake.connections();
      await listTimes(pooled, 1);
      const user = pooled.getCurrentUser();
      assert.ok(user);
      (user as { token?: string }).token = 'second';
      await listTimes(pooled, 1);
      assert.deepEqual(seen, ['Bearer first', 'Bearer second']);
      assert.equal(fake.connections() - c0, 1);
    } finally {
      fake.server.off('request', record);
      await pooled.closePool();
    }
  });

  it('opens a new pool when the TLS material changes (a rotated client certificate)', async () => {
    const pooled = new PooledKubeConfig();
    load(pooled, fake.url, 't');
    const c0 = fake.connections();
    await listTimes(pooled, 2);
    assert.equal(fake.connections() - c0, 1);
    const cluster = pooled.getCurrentCluster();
    assert.ok(cluster);
    // A different server name is different TLS material: the old pool must not be reused.
    (cluster as { tlsServerName?: string }).tlsServerName = 'other';
    await listTimes(pooled, 2);
    assert.equal(fake.connections() - c0, 2);
    await pooled.closePool();
  });
});
