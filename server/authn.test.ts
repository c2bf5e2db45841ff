import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { Authenticator, bearerToken, TOKEN_CACHE_TTL_MS, userFromCertificate } from './authn.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

describe('userFromCertificate (the x509 authenticator)', () => {
  it('takes the user from CN and the groups from O, of a verified chain only', () => {
    assert.deepEqual(userFromCertificate({ peerVerified: true, peerCertificate: { subject: { CN: 'kube-apiserver-kubelet-client', O: 'system:masters' } } }), {
      name: 'kube-apiserver-kubelet-client',
      groups: ['system:masters'],
    });
    assert.deepEqual(userFromCertificate({ peerVerified: true, peerCertificate: { subject: { CN: 'u', O: ['a', 'b'] }, ext_key_usage: [CLIENT_AUTH] } }), { name: 'u', groups: ['a', 'b'] });
    assert.equal(userFromCertificate({ peerVerified: false, peerCertificate: { subject: { CN: 'u' } } }), undefined);
  });

  it('refuses a certificate not for client authentication, one without a CN, and no certificate', () => {
    assert.equal(userFromCertificate({ peerVerified: true, peerCertificate: { subject: { CN: 'u' }, ext_key_usage: [SERVER_AUTH] } }), undefined);
    assert.equal(userFromCertificate({ peerVerified: true, peerCertificate: { subject: { O: 'g' } } }), undefined);
    assert.equal(userFromCertificate({ peerVerified: true }), undefined);
  });
});

describe('bearerToken', () => {
  it('reads `Bearer <token>` only', () => {
    assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
    assert.equal(bearerToken('bearer abc'), 'abc');
    for (const bad of [undefined, '', 'Bearer', 'Bearer ', 'Basic dXNlcjpw', 'Bearer a b']) assert.equal(bearerToken(bad), undefined, String(bad));
  });
});

describe('Authenticator', () => {
  it('prefers the certificate, and does not ask about the token then', async () => {
    const tokens = new FakeTokenReviewer(new Map());
    const authn = new Authenticator(tokens, createFakeClock());
    const user = await authn.authenticate({ peerVerified: true, peerCertificate: { subject: { CN: 'c' } }, authorizationHeader: 'Bearer t' });
    assert.equal(user?.name, 'c');
    assert.deepEqual(tokens.asked, []);
  });

  it('falls back to the token when the certificate does not verify', async () => {
    const tokens = new FakeTokenReviewer(new Map([['t', { name: 'tok', groups: [] }]]));
    const user = await new Authenticator(tokens, createFakeClock()).authenticate({ peerVerified: false, peerCertificate: { subject: { CN: 'c' } }, authorizationHeader: 'Bearer t' });
    assert.equal(user?.name, 'tok');
  });

  it('caches both answers for 2 minutes, and never an error', async () => {
    const clock = createFakeClock();
    const tokens = new FakeTokenReviewer(new Map([['good', { name: 'g', groups: [] }]]));
    const authn = new Authenticator(tokens, clock);
    const as = (token: string): Promise<string | undefined> => authn.authenticate({ peerVerified: false, authorizationHeader: `Bearer ${token}` }).then((u) => u?.name);
    assert.equal(await as('good'), 'g');
    assert.equal(await as('bad'), undefined);
    await clock.advance(TOKEN_CACHE_TTL_MS - 1);
    assert.equal(await as('good'), 'g');
    assert.equal(await as('bad'), undefined);
    assert.deepEqual(tokens.asked, ['good', 'bad']);
    await clock.advance(1);
    assert.equal(await as('good'), 'g');
    assert.deepEqual(tokens.asked, ['good', 'bad', 'good']);
    tokens.failWith = new Error('api down');
    await assert.rejects(as('other'), /api down/);
    tokens.failWith = undefined;
    assert.equal(await as('other'), undefined);
    assert.deepEqual(tokens.asked, ['good', 'bad', 'good', 'other', 'other']);
  });
});
