import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { connect, createServer } from 'node:tls';
import { SELF_SIGNED_KEY, servingCredentials, type ServingCredentials } from './tls.js';
import { makeCertificate } from '../kube/certificates/x509.js';

/**
 * A TLS handshake to a server presenting `served`, as a client that verifies the chain against
 * `caPem` and the address against the certificate (what the API server does with
 * --kubelet-certificate-authority): undefined when it verified, else the client's error code.
 */
async function handshake(served: ServingCredentials, caPem: string): Promise<string | undefined> {
  const server = createServer({ cert: served.certPem, key: served.keyPem }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, ca: caPem }, () => {
        socket.end();
        resolve(undefined);
      });
      socket.on('error', (error: Error & { code?: string }) => { resolve(error.code ?? error.message); });
    });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('servingCredentials', () => {
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("makes a self-signed certificate for the node's IP and name, keeps it across restarts, and replaces it when the IP changes", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'tls-'));
    dirs.push(root);
    const pkiDir = path.join(root, 'pki');
    const base = { pkiDir, nodeName: 'node-1', nodeIp: '10.1.2.3', now: Date.now() };
    const first = await servingCredentials(base);
    assert.equal(first.source, 'self-signed (new)');
    const cert = new X509Certificate(first.certPem);
    assert.equal(cert.checkIP('10.1.2.3'), '10.1.2.3');
    assert.equal(cert.checkHost('node-1'), 'node-1');
    assert.ok(cert.verify(cert.publicKey), 'self-signed');
    assert.equal((await stat(path.join(pkiDir, SELF_SIGNED_KEY))).mode & 0o777, 0o600);
    const again = await servingCredentials({ ...base, now: base.now + 1000 });
    assert.deepEqual([again.source, again.certPem, again.keyPem], ['self-signed (kept)', first.certPem, first.keyPem]);
    const moved = await servingCredentials({ ...base, nodeIp: '10.1.2.4' });
    assert.equal(moved.source, 'self-signed (new)');
    assert.equal(new X509Certificate(moved.certPem).checkIP('10.1.2.4'), '10.1.2.4');
    const expired = await servingCredentials({ ...base, nodeIp: '10.1.2.4', now: base.now + 400 * 24 * 3600 * 1000 });
    assert.equal(expired.source, 'self-signed (new)');
  });

  it('serves the files given, so a client holding their CA verifies it and a client with another CA refuses it', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'tls-'));
    dirs.push(root);
    const now = Date.now();
    const validity = { notBefore: new Date(now - 60_000), notAfter: new Date(now + 3600_000) };
    const ca = makeCertificate({ subject: { commonName: 'cluster-ca' }, isCa: true, ...validity });
    const otherCa = makeCertificate({ subject: { commonName: 'other-ca' }, isCa: true, ...validity });
    const leaf = makeCertificate({ subject: { commonName: 'system:node:node-1', organizations: ['system:nodes'] }, altNames: ['127.0.0.1', 'node-1'], usages: ['serverAuth'], issuer: ca, ...validity });
    const certFile = path.join(root, 'node-serving.crt');
    const keyFile = path.join(root, 'node-serving.key');
    await writeFile(certFile, leaf.certPem);
    await writeFile(keyFile, leaf.keyPem);
    const base = { pkiDir: path.join(root, 'pki'), nodeName: 'node-1', nodeIp: '127.0.0.1', now };

    const fromFiles = await servingCredentials({ ...base, certFile, keyFile });
    assert.deepEqual([fromFiles.source, fromFiles.certPem, fromFiles.keyPem], ['files', leaf.certPem, leaf.keyPem]);
    assert.equal(await handshake(fromFiles, ca.certPem), undefined, 'the cluster CA verifies the served certificate');
    assert.equal(await handshake(fromFiles, otherCa.certPem), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'another CA does not');
    // The default (no files) is self-signed: a client verifying with the cluster CA refuses it.
    const selfSigned = await servingCredentials(base);
    assert.equal(selfSigned.source, 'self-signed (new)');
    assert.equal(await handshake(selfSigned, ca.certPem), 'DEPTH_ZERO_SELF_SIGNED_CERT');
    assert.equal(await handshake(selfSigned, selfSigned.certPem), undefined, 'trusted as itself, as the e2e tests did before');
  });
});
