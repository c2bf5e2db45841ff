import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { FakeAccessReviewer, FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import { makeCertificate } from '../kube/certificates/x509.js';

const DAY_MS = 24 * 3600 * 1000;
const now = Date.now();
const ca = makeCertificate({ subject: { commonName: 'test-ca' }, isCa: true, notBefore: new Date(now - DAY_MS), notAfter: new Date(now + DAY_MS) });
const servingFor = (): ReturnType<typeof makeCertificate> =>
  makeCertificate({ subject: { commonName: 'system:node:node-1', organizations: ['system:nodes'] }, altNames: ['127.0.0.1'], usages: ['serverAuth'], notBefore: new Date(now - 1000), notAfter: new Date(now + DAY_MS), issuer: ca });

/** The certificate a verifying client is served, or the client's error code. */
async function served(port: number): Promise<{ fingerprint: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem }, () => {
      resolve({ fingerprint: socket.getPeerX509Certificate()?.fingerprint256 ?? '' });
      socket.end();
    });
    socket.on('error', (error: Error & { code?: string }) => {
      resolve({ error: error.code ?? error.message });
    });
  });
}

describe('node server certificate switch', () => {
  let server: NodeServer | undefined;
  after(async () => {
    await server?.stop();
  });

  it('fails handshakes until it has a certificate, then serves each new one from the next connection, without a restart', async () => {
    const clock = createFakeClock();
    server = createNodeServer({ address: '127.0.0.1', port: 0, authenticator: new Authenticator(new FakeTokenReviewer(new Map()), clock), authorizer: new NodeAuthorizer(new FakeAccessReviewer(() => false), 'node-1', clock), routes: [], logger: pino({ level: 'silent' }) });
    const port = await server.start();
    const before = await served(port);
    assert.ok('error' in before, 'a handshake without a certificate must fail');

    const first = servingFor();
    server.setCredentials(first.certPem, first.keyPem);
    assert.deepEqual(await served(port), { fingerprint: new X509Certificate(first.certPem).fingerprint256 });

    const second = servingFor();
    server.setCredentials(second.certPem, second.keyPem);
    assert.deepEqual(await served(port), { fingerprint: new X509Certificate(second.certPem).fingerprint256 });
    assert.notEqual(new X509Certificate(first.certPem).fingerprint256, new X509Certificate(second.certPem).fingerprint256);
  });
});
