/**
 * A rotated client certificate reaches the next request: the transport keys its connection pool by
 * the modification time of the certificate and key files (checked at most once a second on its
 * clock), as the node's identity rotates `<cert-dir>/nodelet-client-current.pem` in place. Against
 * a real TLS server that requires client certificates and reports the CN it was shown.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, describe, it } from 'node:test';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { makeCertificate } from './certificates/x509.js';
import { KubeTransport } from './transport.js';

const DAY_MS = 24 * 3600 * 1000;
const window = { notBefore: new Date(Date.now() - DAY_MS), notAfter: new Date(Date.now() + DAY_MS) };
const ca = makeCertificate({ subject: { commonName: 'test-ca' }, isCa: true, ...window });
const serving = makeCertificate({ subject: { commonName: 'api' }, altNames: ['127.0.0.1'], usages: ['serverAuth'], issuer: ca, ...window });
const client = (name: string): ReturnType<typeof makeCertificate> => makeCertificate({ subject: { commonName: name, organizations: ['system:nodes'] }, usages: ['clientAuth'], issuer: ca, ...window });

describe('KubeTransport and a rotated client certificate', () => {
  const dirs: string[] = [];
  let server: https.Server | undefined;
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => { if (server === undefined) resolve(); else server.close(() => { resolve(); }); });
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('presents the new certificate once the pair file changed, after at most a second on its clock', async () => {
    server = https.createServer({ cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ cn: peer.subject.CN }));
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'transport-rotation-'));
    dirs.push(dir);
    const pairFile = path.join(dir, 'nodelet-client-current.pem');
    const first = client('system:node:a');
    await writeFile(pairFile, first.certPem + first.keyPem);
    const clock = createFakeClock(Date.now());
    const transport = new KubeTransport({ server: `https://127.0.0.1:${port}`, ca: { data: Buffer.from(ca.certPem) }, clientCert: { file: pairFile }, clientKey: { file: pairFile }, insecureSkipTlsVerify: false }, clock);
    const who = async (): Promise<string> => (await transport.request<{ cn: string }>({ method: 'GET', path: '/whoami' })).cn;
    assert.equal(await who(), 'system:node:a');
    // The rotation: a new pair written over the file (a later modification time and another size).
    const second = client('system:node:a-rotated');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await writeFile(pairFile, second.certPem + second.keyPem);
    assert.equal(await who(), 'system:node:a', 'the file is looked at again at most once a second');
    await clock.advance(1000);
    assert.equal(await who(), 'system:node:a-rotated');
    transport.close();
  });
});
