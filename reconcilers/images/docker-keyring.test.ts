import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DockerConfigError, DockerKeyring, isDockerConfigError, keyMatchesImage, keyringKey, parseDockerConfigJson, parseDockercfg, type RegistryCredential } from './docker-keyring.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function keyring(entries: Record<string, string>): DockerKeyring {
  const ring = new DockerKeyring();
  ring.add(Object.entries(entries).map(([key, user]): [string, RegistryCredential] => [key, { username: user, password: `${user}-pw` }]));
  return ring;
}

const users = (found: RegistryCredential[]): string[] => found.map((c) => c.username);

describe('docker config keys', () => {
  const cases: [string, string][] = [
    ['registry.example.com', 'registry.example.com'],
    ['https://registry.example.com', 'registry.example.com'],
    ['http://registry.example.com:5000/', 'registry.example.com:5000'],
    ['https://index.docker.io/v1/', 'index.docker.io'],
    ['https://quay.io/v2/', 'quay.io'],
    ['quay.io/team', 'quay.io/team'],
    ['https://quay.io/v1/team/app', 'quay.io/team/app'],
    ['127.0.0.1:5000', '127.0.0.1:5000'],
  ];
  for (const [configKey, expected] of cases) {
    it(`keys ${configKey} as ${expected}`, () => {
      assert.equal(keyringKey(configKey), expected);
    });
  }
});

describe('matching a key against an image repository', () => {
  const matches: [string, string][] = [
    ['*.kubernetes.io', 'prefix.kubernetes.io/app'],
    ['prefix.*.io', 'prefix.kubernetes.io/app'],
    ['prefix.kubernetes.*', 'prefix.kubernetes.io/app'],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io/app'],
    ['reg[0-9].example.com', 'reg7.example.com/app'],
    ['quay.io/team', 'quay.io/team/app'],
    ['127.0.0.1:5000', '127.0.0.1:5000/private/busybox'],
    ['docker.io', 'docker.io/library/busybox'],
  ];
  for (const [key, image] of matches) {
    it(`matches ${key} with ${image}`, () => {
      assert.equal(keyMatchesImage(key, image), true);
    });
  }
  const misses: [string, string, string][] = [
    ['*.kubernetes.io', 'kubernetes.io/app', 'a glob label needs a label to match'],
    ['*.kubernetes.io', 'a.b.kubernetes.io/app', 'hosts need as many labels'],
    ['prefix.kubernetes.io', 'other.kubernetes.io/app', 'labels differ'],
    ['registry.example.com:5000', 'registry.example.com/app', 'ports differ'],
    ['registry.example.com', 'registry.example.com:5000/app', 'the image has a port the key has not'],
    ['127.0.0.1:5000', '127.0.0.1:5001/private/busybox', 'ports differ'],
    ['quay.io/team', 'quay.io/other/app', 'the key path is not a prefix'],
    ['reg[0-9].example.com', 'regx.example.com/app', 'the class does not match'],
    ['reg[0-9.example.com', 'reg1.example.com/app', 'a malformed glob matches nothing'],
    ['prefix.kubernetes.io', '*.kubernetes.io/app', 'globs count only in keys'],
  ];
  for (const [key, image, why] of misses) {
    it(`does not match ${key} with ${image}: ${why}`, () => {
      assert.equal(keyMatchesImage(key, image), false);
    });
  }
});

describe('keyring lookup', () => {
  it('returns the credentials of every matching key, most specific first', () => {
    const ring = keyring({ 'quay.io': 'host', 'quay.io/team': 'team', 'quay.io/team/app': 'app', 'quay.io/other': 'other' });
    assert.deepEqual(users(ring.lookup('quay.io/team/app')), ['app', 'team', 'host']);
    assert.deepEqual(users(ring.lookup('quay.io/other/thing')), ['other', 'host']);
  });

  it('treats /v1/ and /v2/ in a key as the bare host', () => {
    const ring = keyring({ 'https://registry.example.com/v2/': 'v2' });
    assert.deepEqual(users(ring.lookup('registry.example.com/team/app')), ['v2']);
  });

  it('keeps every credential written under the same key, in the order added', () => {
    const ring = new DockerKeyring();
    ring.add([['registry.example.com', { username: 'first', password: 'a' }]]);
    ring.add([['https://registry.example.com', { username: 'second', password: 'b' }]]);
    assert.deepEqual(users(ring.lookup('registry.example.com/app')), ['first', 'second']);
  });

  it('uses the index.docker.io credentials for a Docker Hub image when no key matches it', () => {
    const ring = keyring({ 'https://index.docker.io/v1/': 'hub', 'quay.io': 'quay' });
    assert.deepEqual(users(ring.lookup('docker.io/library/busybox')), ['hub']);
    assert.deepEqual(users(ring.lookup('docker.io/team/app')), ['hub']);
    assert.deepEqual(users(ring.lookup('ghcr.io/team/app')), []);
  });

  it('prefers a key that matches a Docker Hub image outright over the index.docker.io fallback', () => {
    const ring = keyring({ 'https://index.docker.io/v1/': 'hub', 'docker.io/team': 'team' });
    assert.deepEqual(users(ring.lookup('docker.io/team/app')), ['team']);
    assert.deepEqual(users(ring.lookup('docker.io/library/busybox')), ['hub']);
  });

  it('finds nothing for a registry no key names', () => {
    assert.deepEqual(keyring({ 'registry.example.com': 'x' }).lookup('127.0.0.1:5000/private/busybox'), []);
  });
});

describe('parsing docker configs', () => {
  it('decodes auth into user and password, keeping colons in the password', () => {
    const entries = parseDockerConfigJson(JSON.stringify({ auths: { 'reg.example.com': { auth: b64('alice:pa:ss') } } }));
    assert.deepEqual(entries, [['reg.example.com', { username: 'alice', password: 'pa:ss' }]]);
  });

  it('lets auth win over username and password, as docker does', () => {
    const entries = parseDockerConfigJson(JSON.stringify({ auths: { reg: { auth: b64('a:b'), username: 'c', password: 'd' } } }));
    assert.deepEqual(entries, [['reg', { username: 'a', password: 'b' }]]);
  });

  it('reads username and password when there is no auth', () => {
    const entries = parseDockerConfigJson(JSON.stringify({ auths: { reg: { username: 'u', password: 'p', email: 'u@example.com' } } }));
    assert.deepEqual(entries, [['reg', { username: 'u', password: 'p' }]]);
  });

  it('reads the legacy .dockercfg shape, a map of keys to entries', () => {
    const entries = parseDockercfg(JSON.stringify({ 'https://index.docker.io/v1/': { auth: b64('hub:secret'), email: 'x@example.com' } }));
    assert.deepEqual(entries, [['https://index.docker.io/v1/', { username: 'hub', password: 'secret' }]]);
  });

  it('accepts a .dockerconfigjson without auths as empty', () => {
    assert.deepEqual(parseDockerConfigJson('{"credsStore":"desktop"}'), []);
  });

  const malformed: [string, string][] = [
    ['not json', 'not valid JSON'],
    ['[]', 'not a JSON object'],
    ['{"auths": []}', '"auths" is not an object'],
    ['{"auths": {"reg": "x"}}', 'entry "reg" is not an object'],
    [JSON.stringify({ auths: { reg: { auth: 'not base64!' } } }), '"auth" is not valid base64'],
    [JSON.stringify({ auths: { reg: { auth: b64('no-colon') } } }), 'does not decode to user:password'],
    [JSON.stringify({ auths: { reg: { username: 7 } } }), '"username" is not a string'],
  ];
  for (const [text, problem] of malformed) {
    it(`refuses ${text} with a DockerConfigError (${problem})`, () => {
      assert.throws(
        () => parseDockerConfigJson(text),
        (error: unknown) => isDockerConfigError(error) && error instanceof DockerConfigError && error.message.includes(problem),
      );
    });
  }
});
