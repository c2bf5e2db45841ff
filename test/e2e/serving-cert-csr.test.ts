/**
 * The node server's certificate through the real CertificateSigningRequest API: the manager runs in
 * this test with the node's own credentials (the shared agent serves its certificate from files),
 * the request is approved with kubectl as an operator would, and the controller-manager's
 * kubelet-serving signer issues it with the cluster CA. The issued certificate must verify against
 * the cluster CA for the node's IP, be stored, be reused by a restarted manager without a new
 * request, and be what a node server built around the manager serves to a verifying client.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { Authenticator } from '../../server/authn.js';
import { NodeAuthorizer } from '../../server/authz.js';
import { apiCsrClient } from '../../kube/certificates/csr-client.js';
import { createNodeServer, type NodeServer } from '../../server/node-server.js';
import { parsePairFile, type CsrClient } from '../../kube/certificates/certificate-manager.js';
import { CURRENT_PAIR_FILE, ServingCertManager } from '../../server/serving-cert-manager.js';
import { systemClock } from '../../util/clock.js';
import { FakeAccessReviewer, FakeTokenReviewer } from '../doubles/fake-access-review.js';
import { kubeClientFrom } from '../doubles/kube-client.js';
import { NODE_IP, NODE_NAME, eventually, kubectl, requireCluster } from './helpers.js';

const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';
const CA_FILE = path.join(CLUSTER_DIR, 'pki', 'ca.crt');

/** The certificate a client verifying with the cluster CA and the node's IP is served, or its error code. */
async function handshake(port: number, caPem: string): Promise<{ fingerprint: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect({ host: NODE_IP, port, ca: caPem }, () => {
      resolve({ fingerprint: socket.getPeerX509Certificate()?.fingerprint256 ?? '' });
      socket.end();
    });
    socket.on('error', (error: Error & { code?: string }) => {
      resolve({ error: error.code ?? error.message });
    });
  });
}

/** The node's client that also remembers the names of the requests it created. */
function recording(client: CsrClient, names: string[]): CsrClient {
  return {
    create: async (request) => {
      const name = await client.create(request);
      names.push(name);
      return name;
    },
    get: (name) => client.get(name),
  };
}

interface CsrObject {
  spec: { signerName: string; usages: string[]; username: string; groups: string[] };
  status?: { conditions?: { type: string }[] };
}

describe('serving certificate through the CSR API (real API server and signer)', () => {
  requireCluster();
  const kube = kubeClientFrom(path.join(CLUSTER_DIR, 'kubeconfig-node'));
  const created: string[] = [];
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    if (created.length > 0) await kubectl(['delete', 'csr', '--ignore-not-found', ...created]);
  });

  it('is requested as the node, issued after approval, served live, stored and reused', async () => {
    const caPem = await readFile(CA_FILE, 'utf8');
    const pkiDir = await mkdtemp(path.join(os.tmpdir(), 'csr-e2e-'));
    cleanups.push(() => rm(pkiDir, { recursive: true, force: true }));
    const logger = pino({ level: 'silent' });
    const client = recording(apiCsrClient(kube, `nodelet-serving-${NODE_NAME}-`), created);
    const manager = new ServingCertManager({ nodeName: NODE_NAME, addresses: [NODE_IP, NODE_NAME], pkiDir, client, clock: systemClock, random: Math.random, logger, pollMs: 100 });
    cleanups.push(() => { manager.stop(); });
    const server: NodeServer = createNodeServer({ address: NODE_IP, port: 0, authenticator: new Authenticator(new FakeTokenReviewer(new Map()), systemClock), authorizer: new NodeAuthorizer(new FakeAccessReviewer(() => false), NODE_NAME, systemClock), routes: [], logger });
    manager.onRotate((pair) => { server.setCredentials(pair.certPem, pair.keyPem); });
    const port = await server.start();
    cleanups.push(() => server.stop());
    await manager.start();

    const name = await eventually('the manager creates a CSR', () => Promise.resolve(created[0]), 30_000);
    const csr = JSON.parse(await kubectl(['get', 'csr', name, '-o', 'json'])) as CsrObject;
    assert.equal(csr.spec.signerName, 'kubernetes.io/kubelet-serving');
    assert.deepEqual(csr.spec.usages, ['digital signature', 'server auth']);
    // The API server records who asked: the node's own credentials.
    assert.equal(csr.spec.username, `system:node:${NODE_NAME}`);
    assert.ok(csr.spec.groups.includes('system:nodes'));
    assert.equal(csr.status?.conditions, undefined, 'nothing approves a kubelet-serving CSR on its own');
    // Not approved: nothing to serve, the handshake fails.
    assert.equal(manager.current(), undefined);
    assert.ok('error' in (await handshake(port, caPem)));

    await kubectl(['certificate', 'approve', name]);
    const approvedAt = Date.now();
    const pair = await eventually('the certificate is issued and picked up', () => Promise.resolve(manager.current()), 60_000);
    console.log(`[serving-cert-csr] issued and picked up ${Date.now() - approvedAt} ms after approval (poll every 100 ms)`);

    const cert = new X509Certificate(pair.certPem);
    assert.equal(cert.verify(new X509Certificate(caPem).publicKey), true, 'signed by the cluster CA');
    assert.equal(cert.checkIP(NODE_IP), NODE_IP);
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${NODE_NAME}(,|$)`));
    assert.match(cert.subject, new RegExp(`CN=system:node:${NODE_NAME}`));
    assert.match(cert.subject, /O=system:nodes/);
    const lifetimeDays = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000;
    console.log(`[serving-cert-csr] issued certificate: ${cert.validFrom} .. ${cert.validTo} (${lifetimeDays.toFixed(1)} days)`);
    // Served live, verified by a client trusting only the cluster CA, for the node's IP.
    assert.deepEqual(await handshake(port, caPem), { fingerprint: cert.fingerprint256 });
    assert.deepEqual(parsePairFile(await readFile(path.join(pkiDir, CURRENT_PAIR_FILE), 'utf8')), pair);
    manager.stop();

    // A restarted manager reuses the stored pair: no second request.
    const restarted = new ServingCertManager({ nodeName: NODE_NAME, addresses: [NODE_IP, NODE_NAME], pkiDir, client, clock: systemClock, random: Math.random, logger, pollMs: 100 });
    cleanups.push(() => { restarted.stop(); });
    await restarted.start();
    assert.deepEqual(restarted.current(), pair);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(created.length, 1, 'no new CSR for a stored pair that still fits');
  });
});
