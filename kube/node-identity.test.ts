import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { CsrClient, CsrRequest } from './certificates/certificate-manager.js';
import { loadKubeconfigFile, type KubeEndpoint } from './kubeconfig.js';
import { CLIENT_PAIR_FILE, CLIENT_SIGNER, nodeClientTemplate, nodeEndpoint, renewingCsrClient, writeNodeKubeconfig } from './node-identity.js';

/** A CSR client that records which credential made each call. */
function recordingClient(label: string, calls: string[]): CsrClient {
  let next = 0;
  return {
    create(request: CsrRequest) {
      next += 1;
      calls.push(`${label}:create:${request.signerName}`);
      return Promise.resolve(`${label}-${String(next)}`);
    },
    get(name) {
      calls.push(`${label}:get:${name}`);
      return Promise.resolve({ phase: 'pending' });
    },
  };
}

const REQUEST: CsrRequest = { csrPem: 'x', signerName: CLIENT_SIGNER, usages: ['digital signature', 'client auth'] };

describe('node identity', () => {
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('asks for system:node:<node> in group system:nodes from the kubelet client signer, with no names and no key encipherment', () => {
    const template = nodeClientTemplate('host-a-nodelet');
    assert.deepEqual(template.subject, { commonName: 'system:node:host-a-nodelet', organizations: ['system:nodes'] });
    assert.equal(template.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(template.altNames, []);
    assert.deepEqual(template.usages, ['digital signature', 'client auth']);
  });

  it('renews with the node certificate while it is valid, with the bootstrap credential once it is not, and reads each request back with the credential that made it', async () => {
    const calls: string[] = [];
    let valid = true;
    const client = renewingCsrClient({ nodeClient: recordingClient('node', calls), bootstrapClient: recordingClient('bootstrap', calls), nodeCertValid: () => valid });
    const renewal = await client.create(REQUEST);
    valid = false;
    const rebootstrap = await client.create(REQUEST);
    // Read back after the validity changed again: still by the credential that created each.
    valid = true;
    await client.get(renewal);
    await client.get(rebootstrap);
    assert.deepEqual(calls, [
      `node:create:${CLIENT_SIGNER}`,
      `bootstrap:create:${CLIENT_SIGNER}`,
      'node:get:node-1',
      'bootstrap:get:bootstrap-1',
    ]);
  });

  it("keeps the bootstrap endpoint's server and trust and drops its token for the pair file", () => {
    const bootstrap: KubeEndpoint = { server: 'https://10.0.0.1:6443', ca: { file: '/sa/ca.crt' }, tokenFile: '/sa/token', insecureSkipTlsVerify: false, tlsServerName: 'kubernetes' };
    assert.deepEqual(nodeEndpoint(bootstrap, '/pki/p.pem'), {
      server: 'https://10.0.0.1:6443',
      ca: { file: '/sa/ca.crt' },
      insecureSkipTlsVerify: false,
      tlsServerName: 'kubernetes',
      clientCert: { file: '/pki/p.pem' },
      clientKey: { file: '/pki/p.pem' },
    });
  });

  it('writes a kubeconfig that reads back as the node endpoint (inline CA or CA file)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'node-identity-'));
    dirs.push(dir);
    const pairFile = path.join(dir, CLIENT_PAIR_FILE);
    for (const ca of [{ data: Buffer.from('ca bytes') }, { file: '/sa/ca.crt' }]) {
      const bootstrap: KubeEndpoint = { server: 'https://10.0.0.1:6443', ca, token: 'bootstrap-token', insecureSkipTlsVerify: false };
      const file = path.join(dir, 'sub', 'kubeconfig');
      await writeNodeKubeconfig(file, bootstrap, pairFile);
      assert.deepEqual(loadKubeconfigFile(file), nodeEndpoint(bootstrap, pairFile));
    }
  });
});
