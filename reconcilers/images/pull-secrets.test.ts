import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import { createPullCredentials, serverAddressFor } from './pull-secrets.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function dockerConfigJsonSecret(name: string, auths: Record<string, object>): V1Secret {
  return { metadata: { name, namespace: 'team' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) } };
}

function pod(secretNames: string[]): V1Pod {
  return {
    metadata: { name: 'app', namespace: 'team', uid: 'uid-1' },
    spec: { containers: [{ name: 'main', image: 'x' }], imagePullSecrets: secretNames.map((name) => ({ name })) },
  };
}

/** Secrets of namespace `team` by name; a name mapped to an Error fails the read. */
function fakeApi(secrets: Record<string, V1Secret | Error>): { readSecret: (ns: string, name: string) => Promise<V1Secret | undefined>; reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    readSecret: (namespace, name) => {
      reads.push(`${namespace}/${name}`);
      const found = namespace === 'team' ? secrets[name] : undefined;
      return found instanceof Error ? Promise.reject(found) : Promise.resolve(found);
    },
  };
}

const registry = dockerConfigJsonSecret('regcred', { '127.0.0.1:5000': { auth: b64('nodelet:s3cret') } });

describe('pull credentials from image pull secrets', () => {
  it('returns the registry credentials of a dockerconfigjson secret, addressed to that registry', async () => {
    const credentials = createPullCredentials(fakeApi({ regcred: registry }));
    assert.deepEqual((await credentials(pod(['regcred']), '127.0.0.1:5000/private/busybox:1.35')).auths, [
      { username: 'nodelet', password: 's3cret', serverAddress: 'https://127.0.0.1:5000' },
    ]);
  });

  it('pulls anonymously, without reading anything, when the pod names no pull secrets', async () => {
    const api = fakeApi({ regcred: registry });
    assert.deepEqual(await createPullCredentials(api)(pod([]), '127.0.0.1:5000/private/busybox:1.35'), { auths: [] });
    assert.deepEqual(api.reads, []);
  });

  it('returns nothing for an image on a registry the secrets do not name', async () => {
    const credentials = createPullCredentials(fakeApi({ regcred: registry }));
    assert.deepEqual(await credentials(pod(['regcred']), 'docker.io/library/busybox:1.35'), { auths: [] });
    assert.deepEqual(await credentials(pod(['regcred']), '127.0.0.1:5001/private/busybox:1.35'), { auths: [] });
  });

  it('reads legacy dockercfg secrets, and gives Docker Hub credentials to Docker Hub images', async () => {
    const legacy: V1Secret = {
      metadata: { name: 'hub' },
      type: 'kubernetes.io/dockercfg',
      data: { '.dockercfg': b64(JSON.stringify({ 'https://index.docker.io/v1/': { username: 'me', password: 'pw', email: 'me@example.com' } })) },
    };
    const credentials = createPullCredentials(fakeApi({ hub: legacy }));
    const expected = [{ username: 'me', password: 'pw', serverAddress: 'https://registry-1.docker.io' }];
    assert.deepEqual((await credentials(pod(['hub']), 'docker.io/team/app:1')).auths, expected);
    assert.deepEqual((await credentials(pod(['hub']), 'index.docker.io/team/app:1')).auths, expected);
  });

  it('puts every secret into one keyring: the most specific key first, whichever secret holds it', async () => {
    const broad = dockerConfigJsonSecret('broad', { 'quay.io': { username: 'broad', password: 'a' } });
    const narrow = dockerConfigJsonSecret('narrow', { 'quay.io/team': { username: 'narrow', password: 'b' } });
    const found = (await createPullCredentials(fakeApi({ broad, narrow }))(pod(['broad', 'narrow']), 'quay.io/team/app:2')).auths;
    assert.deepEqual(found.map((c) => c.username), ['narrow', 'broad']);
    assert.ok(found.every((c) => c.serverAddress === 'https://quay.io'));
  });

  it('skips a missing secret and uses the others; the FailedToRetrieveImagePullSecret warning waits for its report', async () => {
    const events = new RecordingEventRecorder();
    const credentials = createPullCredentials({ ...fakeApi({ regcred: registry }), events });
    const found = await credentials(pod(['gone', 'regcred']), '127.0.0.1:5000/private/busybox:1.35');
    assert.deepEqual(found.auths.map((c) => c.username), ['nodelet']);
    assert.equal(events.events.length, 0, 'no warning until a pull failed (the kubelet since 1.37)');
    found.reportUnusable?.();
    assert.deepEqual(events.events.map((e) => [e.type, e.reason, e.message]), [
      ['Warning', 'FailedToRetrieveImagePullSecret', 'Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed.'],
    ]);
  });

  it('skips a secret the API fails to serve, saying why, instead of failing the pull', async () => {
    const events = new RecordingEventRecorder();
    const credentials = createPullCredentials({ ...fakeApi({ regcred: new Error('get secret team/regcred: connection refused') }), events });
    const found = await credentials(pod(['regcred']), '127.0.0.1:5000/private/busybox:1.35');
    assert.deepEqual(found.auths, []);
    found.reportUnusable?.();
    assert.match(events.events[0]?.message ?? '', /\(regcred: get secret team\/regcred: connection refused\)/);
  });

  it('skips a malformed secret and one of another type, naming the problem of each', async () => {
    const events = new RecordingEventRecorder();
    const broken: V1Secret = { metadata: { name: 'broken' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{nope') } };
    const opaque: V1Secret = { ...registry, metadata: { name: 'opaque' }, type: 'Opaque' };
    const empty: V1Secret = { metadata: { name: 'empty' }, type: 'kubernetes.io/dockerconfigjson', data: {} };
    const credentials = createPullCredentials({ ...fakeApi({ broken, opaque, empty }), events });
    const found = await credentials(pod(['broken', 'opaque', 'empty']), '127.0.0.1:5000/private/busybox:1.35');
    assert.deepEqual(found.auths, []);
    found.reportUnusable?.();
    const message = events.events[0]?.message ?? '';
    assert.match(message, /broken: \.dockerconfigjson is not valid JSON/);
    assert.match(message, /opaque: is of type Opaque/);
    assert.match(message, /empty: has no \.dockerconfigjson/);
    assert.equal(events.events.length, 1);
  });

  it('reads a secret named twice only once', async () => {
    const api = fakeApi({ regcred: registry });
    const found = (await createPullCredentials(api)(pod(['regcred', 'regcred']), '127.0.0.1:5000/private/busybox:1.35')).auths;
    assert.equal(found.length, 1);
    assert.deepEqual(api.reads, ['team/regcred']);
  });

  it('records no warning when every secret is usable', async () => {
    const events = new RecordingEventRecorder();
    await createPullCredentials({ ...fakeApi({ regcred: registry }), events })(pod(['regcred']), 'docker.io/library/busybox:1.35');
    assert.deepEqual(events.events, []);
  });
});

describe('the server address credentials are bound to', () => {
  it('is the registry host with a scheme, and the API host for Docker Hub', () => {
    assert.equal(serverAddressFor('127.0.0.1:5000'), 'https://127.0.0.1:5000');
    assert.equal(serverAddressFor('quay.io'), 'https://quay.io');
    assert.equal(serverAddressFor('docker.io'), 'https://registry-1.docker.io');
  });
});
