import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../kube/client.js';
import { KubeTransport } from '../../kube/transport.js';
import { createVolumeSourceApi } from './api.js';
import type { VolumeSourceApi } from './types.js';

interface Recorded {
  readonly method: string;
  readonly url: string;
  readonly body: unknown;
}

const ROUTES: Readonly<Record<string, readonly [number, unknown]>> = {
  '/api/v1/namespaces/shop/configmaps/app': [200, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' }, data: { k: 'v' } }],
  '/api/v1/namespaces/shop/secrets/db': [200, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { pw: 'czNjcmV0' } }],
  '/api/v1/namespaces/shop/serviceaccounts/web-sa/token': [
    201,
    { kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', status: { token: 'jwt', expirationTimestamp: '2030-01-01T00:00:00Z' } },
  ],
  '/api/v1/namespaces/shop/configmaps/forbidden': [
    403,
    { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'configmaps "forbidden" is forbidden: no' },
  ],
};
const NOT_FOUND = [404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' }] as const;

/** A loopback stand-in for the API server: answers by path, records requests. */
function startServer(recorded: Recorded[]): http.Server {
  return http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      recorded.push({ method: req.method ?? '', url: req.url ?? '', body: text === '' ? undefined : JSON.parse(text) });
      const [status, body] = ROUTES[req.url ?? ''] ?? NOT_FOUND;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
}

describe('createVolumeSourceApi', () => {
  const recorded: Recorded[] = [];
  const server = startServer(recorded);
  let api: VolumeSourceApi;

  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    api = createVolumeSourceApi(new KubeClient(new KubeTransport({ server: `http://127.0.0.1:${port}`, token: 'admin', insecureSkipTlsVerify: true })));
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('reads config maps and secrets, and answers undefined for ones that do not exist', async () => {
    assert.deepEqual((await api.readConfigMap('shop', 'app'))?.data, { k: 'v' });
    assert.deepEqual((await api.readSecret('shop', 'db'))?.data, { pw: 'czNjcmV0' });
    assert.equal(await api.readConfigMap('shop', 'missing'), undefined);
    assert.equal(await api.readSecret('shop', 'missing'), undefined);
  });

  it('reports other API failures with the server message', async () => {
    await assert.rejects(api.readConfigMap('shop', 'forbidden'), {
      message: 'get configmap shop/forbidden: configmaps "forbidden" is forbidden: no',
    });
  });

  it('creates a TokenRequest bound to the pod and returns the token with its expiry', async () => {
    const issued = await api.requestServiceAccountToken({
      namespace: 'shop',
      serviceAccountName: 'web-sa',
      audience: 'vault',
      expirationSeconds: 600,
      podName: 'web-0',
      podUid: 'uid-1',
    });

    assert.deepEqual(issued, { token: 'jwt', expiresAt: new Date('2030-01-01T00:00:00Z') });
    const request = recorded.find((r) => r.url.endsWith('/token'));
    assert.equal(request?.method, 'POST');
    assert.deepEqual(request?.body, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: ['vault'],
        expirationSeconds: 600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web-0', uid: 'uid-1' },
      },
    });
  });
});
