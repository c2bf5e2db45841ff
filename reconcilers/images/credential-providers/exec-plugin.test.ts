import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CredentialProviderSpec } from './config.js';
import { CredentialProviderPluginError, execCredentialPlugin, parseCredentialProviderResponse } from './exec-plugin.js';

const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const SECRET = 'hunter2-secret';

/**
 * A plugin for the tests: records its stdin, args and two variables, then answers as $MODE says
 * (ok, fail, slow, wrong-version).
 */
const PLUGIN = `#!/bin/sh
cat > "$RECORD_DIR/stdin"
printf '%s\\n' "$@" > "$RECORD_DIR/args"
printf 'FROM_AGENT=%s\\nOVERRIDDEN=%s\\n' "$FROM_AGENT" "$OVERRIDDEN" > "$RECORD_DIR/env"
case "$MODE" in
  fail) echo "token endpoint refused us" >&2; exit 3 ;;
  slow) exec sleep 30 ;;
  wrong-version) echo '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image"}' ;;
  *) echo '{"apiVersion":"${V1}","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"registry.test":{"username":"robot","password":"${SECRET}"}}}' ;;
esac
`;

function spec(mode: string, dir: string): CredentialProviderSpec {
  return { name: 'test-plugin', matchImages: ['registry.test'], defaultCacheDurationMs: 0, apiVersion: V1, args: ['get-credentials', '--verbose'], env: [{ name: 'MODE', value: mode }, { name: 'RECORD_DIR', value: dir }, { name: 'OVERRIDDEN', value: 'by-provider' }] };
}

describe('the credential provider exec plugin, run as a process', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'cred-plugin-'));
    await writeFile(path.join(dir, 'test-plugin'), PLUGIN, { mode: 0o755 });
  });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  const run = (timeoutMs?: number): ReturnType<typeof execCredentialPlugin> =>
    execCredentialPlugin({ binDir: dir, environment: { PATH: process.env.PATH ?? '', FROM_AGENT: 'agent', OVERRIDDEN: 'agent' }, ...(timeoutMs === undefined ? {} : { timeoutMs }) });

  it('sends the request on stdin with the args and the environment, and decodes the answer', async () => {
    const response = await run()(spec('ok', dir), 'registry.test/team/app');
    assert.deepEqual(response, { cacheKeyType: 'Registry', cacheDurationMs: 300_000, auth: [['registry.test', { username: 'robot', password: SECRET }]] });
    assert.deepEqual(JSON.parse(await readFile(path.join(dir, 'stdin'), 'utf8')), { apiVersion: V1, kind: 'CredentialProviderRequest', image: 'registry.test/team/app' });
    assert.equal(await readFile(path.join(dir, 'args'), 'utf8'), 'get-credentials\n--verbose\n');
    assert.equal(await readFile(path.join(dir, 'env'), 'utf8'), 'FROM_AGENT=agent\nOVERRIDDEN=by-provider\n');
  });

  it("reports a failed plugin with its exit status and stderr", async () => {
    await assert.rejects(run()(spec('fail', dir), 'registry.test/app'), (e: unknown) => e instanceof CredentialProviderPluginError && e.message.includes('exited with status 3 for image registry.test/app: token endpoint refused us'));
  });

  it('kills a plugin that outlives the time limit, and one whose pull is cancelled', async () => {
    const started = Date.now();
    await assert.rejects(run(300)(spec('slow', dir), 'registry.test/app'), (e: unknown) => e instanceof CredentialProviderPluginError && e.message.includes('killed by SIGKILL'));
    assert.ok(Date.now() - started < 10_000, 'killed at the limit, not after the plugin\'s 30 s');
    const controller = new AbortController();
    const pending = run()(spec('slow', dir), 'registry.test/app', controller.signal);
    setTimeout(() => { controller.abort(); }, 100);
    await assert.rejects(pending);
  });

  it('refuses an answer of another protocol version', async () => {
    await assert.rejects(run()(spec('wrong-version', dir), 'registry.test/app'), /did not match expected apiVersion:credentialprovider\.kubelet\.k8s\.io\/v1, actual apiVersion:credentialprovider\.kubelet\.k8s\.io\/v1beta1/);
  });
});

describe('parseCredentialProviderResponse', () => {
  const s = spec('ok', '/nowhere');
  it('takes no cacheDuration as "the default" and 0s as "do not cache"', () => {
    const base = { apiVersion: V1, kind: 'CredentialProviderResponse', cacheKeyType: 'Global' };
    assert.equal(parseCredentialProviderResponse(s, JSON.stringify(base)).cacheDurationMs, undefined);
    assert.equal(parseCredentialProviderResponse(s, JSON.stringify({ ...base, cacheDuration: '0s' })).cacheDurationMs, 0);
  });

  it('refuses a wrong kind, a missing or unknown cacheKeyType, and junk, never quoting credentials', () => {
    const auth = { 'registry.test': { username: 'robot', password: SECRET } };
    const bad = [
      JSON.stringify({ apiVersion: V1, kind: 'Other', cacheKeyType: 'Image', auth }),
      JSON.stringify({ apiVersion: V1, kind: 'CredentialProviderResponse', auth }),
      JSON.stringify({ apiVersion: V1, kind: 'CredentialProviderResponse', cacheKeyType: 'Repository', auth }),
      JSON.stringify({ apiVersion: V1, kind: 'CredentialProviderResponse', cacheKeyType: 'Image', cacheDuration: 'soon', auth }),
      `{"apiVersion":"${V1}", "password":"${SECRET}"`,
    ];
    for (const text of bad) {
      assert.throws(() => parseCredentialProviderResponse(s, text), (e: unknown) => e instanceof CredentialProviderPluginError && !e.message.includes(SECRET), text.slice(0, 80));
    }
  });
});
