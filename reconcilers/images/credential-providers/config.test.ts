import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { CredentialProviderConfigError, loadCredentialProviders, parseCredentialProviderConfig } from './config.js';

const VALID = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-login
    matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.test:5000/team"]
    defaultCacheDuration: 12h
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: [get-credentials]
    env:
      - name: AWS_PROFILE
        value: temp
`;

/** VALID with one provider field replaced (or removed, with `undefined`). */
function withProvider(field: string, value: string | undefined): string {
  const lines = VALID.split('\n').filter((l) => !l.startsWith(`    ${field}:`));
  if (value !== undefined) lines.splice(4, 0, `    ${field}: ${value}`);
  return lines.join('\n');
}

describe('parseCredentialProviderConfig', () => {
  it('reads a provider as the kubelet does: name, patterns, cache duration, protocol version, args and env', () => {
    assert.deepEqual(parseCredentialProviderConfig(VALID, 'c.yaml'), [{
      name: 'ecr-login',
      matchImages: ['*.dkr.ecr.*.amazonaws.com', 'registry.test:5000/team'],
      defaultCacheDurationMs: 12 * 3_600_000,
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      args: ['get-credentials'],
      env: [{ name: 'AWS_PROFILE', value: 'temp' }],
    }]);
    const json = JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'CredentialProviderConfig', providers: [{ name: 'p', matchImages: ['r.test'], defaultCacheDuration: '0s', apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1' }] });
    assert.deepEqual(parseCredentialProviderConfig(json, 'c.json').map((p) => [p.name, p.defaultCacheDurationMs, p.args, p.env]), [['p', 0, [], []]]);
  });

  it("refuses what the kubelet's validation refuses, naming the field", () => {
    const cases: [string, string, RegExp][] = [
      ['a name with a slash', VALID.replace('name: ecr-login', 'name: a/b'), /name: "a\/b" cannot contain/],
      ['no matchImages', withProvider('matchImages', '[]'), /matchImages: at least 1 item/],
      ['no defaultCacheDuration', withProvider('defaultCacheDuration', undefined), /defaultCacheDuration: required/],
      ['a negative defaultCacheDuration', withProvider('defaultCacheDuration', '-1m'), /greater than or equal to 0/],
      ['a duration without a unit', withProvider('defaultCacheDuration', '"10"'), /not a duration/],
      ['an unknown protocol version', withProvider('apiVersion', 'credentialprovider.kubelet.k8s.io/v2'), /apiVersion: "credentialprovider\.kubelet\.k8s\.io\/v2" is not supported/],
      ['a pattern with a space', withProvider('matchImages', '["registry .test"]'), /match image is invalid/],
      ['service account token mode', withProvider('tokenAttributes', '{serviceAccountTokenAudience: x, requireServiceAccount: true, cacheType: Token}'), /tokenAttributes: service account tokens for credential providers are not supported by nodelet/],
      ['another kind', VALID.replace('kind: CredentialProviderConfig', 'kind: KubeletConfiguration'), /kind is "KubeletConfiguration"/],
      ['another config version', VALID.replace('kubelet.config.k8s.io/v1', 'kubelet.config.k8s.io/v2'), /apiVersion "kubelet\.config\.k8s\.io\/v2" is not one of/],
      ['not YAML', 'providers: [', /not YAML or JSON/],
    ];
    for (const [name, text, message] of cases) {
      assert.throws(() => parseCredentialProviderConfig(text, 'c.yaml'), (e: unknown) => e instanceof CredentialProviderConfigError && message.test(e.message), name);
    }
  });
});

describe('loadCredentialProviders', () => {
  const dirs: string[] = [];
  after(async () => { await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))); });

  async function fixture(): Promise<{ dir: string; bin: string }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cred-config-'));
    dirs.push(dir);
    const bin = path.join(dir, 'bin');
    await mkdir(bin);
    return { dir, bin };
  }

  it("merges a directory's config files in name order and checks every plugin is an executable in the bin dir", async () => {
    const { dir, bin } = await fixture();
    const conf = path.join(dir, 'conf.d');
    await mkdir(conf);
    await writeFile(path.join(conf, '20-b.yaml'), VALID.replace('ecr-login', 'b'));
    await writeFile(path.join(conf, '10-a.json'), JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1', kind: 'CredentialProviderConfig', providers: [{ name: 'a', matchImages: ['r.test'], defaultCacheDuration: '1m', apiVersion: 'credentialprovider.kubelet.k8s.io/v1' }] }));
    await writeFile(path.join(conf, 'README'), 'not a config');
    for (const name of ['a', 'b']) await writeFile(path.join(bin, name), '#!/bin/sh\n', { mode: 0o755 });
    assert.deepEqual((await loadCredentialProviders(conf, bin)).map((p) => p.name), ['a', 'b']);

    await chmod(path.join(bin, 'b'), 0o644);
    await assert.rejects(loadCredentialProviders(conf, bin), /plugin binary executable .*\/b is not an executable file/);
    await rm(path.join(bin, 'b'));
    await assert.rejects(loadCredentialProviders(conf, bin), /plugin binary executable .*\/b: ENOENT/);
    await assert.rejects(loadCredentialProviders(conf, path.join(dir, 'missing')), /plugin binary directory .*missing: ENOENT/);
    await writeFile(path.join(conf, '30-dup.yaml'), VALID.replace('ecr-login', 'a'));
    await writeFile(path.join(bin, 'b'), '#!/bin/sh\n', { mode: 0o755 });
    await assert.rejects(loadCredentialProviders(conf, bin), /duplicate provider name "a"/);
    const empty = path.join(dir, 'empty');
    await mkdir(empty);
    await assert.rejects(loadCredentialProviders(empty, bin), /no configuration files found/);
  });
});
