import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { inClusterEndpoint, InvalidKubeconfigError, loadKubeconfigFile, parseKubeconfig, UnsupportedKubeconfigError } from './kubeconfig.js';

function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = { server: 'https://10.0.0.1:6443/' }): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'other', cluster: { server: 'https://wrong:1' } }, { name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'ctx',
  });
}

describe('kubeconfig', () => {
  it("reads the current context's server, CA and token (YAML or JSON), without a trailing slash", () => {
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
    const endpoint = parseKubeconfig(kubeconfig({ token: 'abc' }, { server: 'https://10.0.0.1:6443/', 'certificate-authority-data': ca, 'tls-server-name': 'kubernetes' }), '/etc');
    assert.deepEqual(endpoint, {
      server: 'https://10.0.0.1:6443',
      insecureSkipTlsVerify: false,
      ca: { data: Buffer.from('-----BEGIN CERTIFICATE-----\n') },
      token: 'abc',
      tlsServerName: 'kubernetes',
    });
  });

  it('resolves certificate, key, CA and token files against the kubeconfig directory', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'kubeconfig-'));
    try {
      const file = path.join(dir, 'config');
      await writeFile(file, [
        'apiVersion: v1',
        'clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: pki/ca.crt, insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {client-certificate: pki/node.crt, client-key: /abs/node.key, tokenFile: token}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'));
      const endpoint = loadKubeconfigFile(file);
      assert.deepEqual(endpoint.ca, { file: path.join(dir, 'pki/ca.crt') });
      assert.deepEqual(endpoint.clientCert, { file: path.join(dir, 'pki/node.crt') });
      assert.deepEqual(endpoint.clientKey, { file: '/abs/node.key' });
      assert.equal(endpoint.tokenFile, path.join(dir, 'token'));
      assert.equal(endpoint.insecureSkipTlsVerify, true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses credentials that need a plugin, basic auth or a proxy, by a typed error', () => {
    for (const user of [{ exec: { command: 'aws' } }, { 'auth-provider': { name: 'oidc' } }, { username: 'a', password: 'b' }]) {
      assert.throws(() => parseKubeconfig(kubeconfig(user), '/'), UnsupportedKubeconfigError);
    }
    assert.throws(() => parseKubeconfig(kubeconfig({ token: 't' }, { server: 'https://h:1', 'proxy-url': 'http://p:3128' }), '/'), UnsupportedKubeconfigError);
  });

  it('names what is missing: no current context, an unknown context, no server, an unreadable file', () => {
    assert.throws(() => parseKubeconfig('apiVersion: v1\n', '/'), InvalidKubeconfigError);
    assert.throws(() => parseKubeconfig(kubeconfig({ token: 't' }).replace('"current-context":"ctx"', '"current-context":"nope"'), '/'), /no context named "nope"/);
    assert.throws(() => parseKubeconfig(kubeconfig({ token: 't' }, {}), '/'), /has no server/);
    assert.throws(() => loadKubeconfigFile('/nonexistent/kubeconfig'), InvalidKubeconfigError);
  });

  it("builds the in-cluster endpoint from the service's environment and the service account's files", () => {
    assert.deepEqual(inClusterEndpoint({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, '/sa'), {
      server: 'https://[fd00::1]:443',
      ca: { file: '/sa/ca.crt' },
      tokenFile: '/sa/token',
      insecureSkipTlsVerify: false,
    });
    assert.throws(() => inClusterEndpoint({}, '/sa'), InvalidKubeconfigError);
  });
});
