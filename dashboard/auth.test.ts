import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { authenticate, guardWrites, isAuthorized, isCrossSite, presentedSecret } from './auth.js';

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('isAuthorized', () => {
  it('accepts the token as a bearer token', () => {
    assert.equal(isAuthorized('Bearer s3cret', 's3cret'), true);
    assert.equal(isAuthorized('bearer s3cret', 's3cret'), true);
  });

  it('accepts the token as the basic-auth password with any user name', () => {
    assert.equal(isAuthorized(basic('admin', 's3cret'), 's3cret'), true);
    assert.equal(isAuthorized(basic('', 's3cret'), 's3cret'), true);
    assert.equal(isAuthorized(basic('me', 'pass:with:colons'), 'pass:with:colons'), true);
  });

  it('refuses a missing header, a wrong token, a token prefix, and other schemes', () => {
    assert.equal(isAuthorized(undefined, 's3cret'), false);
    assert.equal(isAuthorized('Bearer wrong', 's3cret'), false);
    assert.equal(isAuthorized('Bearer s3cre', 's3cret'), false);
    assert.equal(isAuthorized('Bearer s3cret-and-more', 's3cret'), false);
    assert.equal(isAuthorized(basic('s3cret', 'x'), 's3cret'), false);
    assert.equal(isAuthorized('Digest s3cret', 's3cret'), false);
    assert.equal(isAuthorized('s3cret', 's3cret'), false);
  });

  it('finds no password in basic credentials without a colon', () => {
    assert.equal(presentedSecret(`Basic ${Buffer.from('nocolon').toString('base64')}`), undefined);
  });
});

describe('isCrossSite', () => {
  it('trusts same-origin and address-bar requests and those without browser headers', () => {
    assert.equal(isCrossSite({ headers: { 'sec-fetch-site': 'same-origin', host: 'h:1' } }), false);
    assert.equal(isCrossSite({ headers: { 'sec-fetch-site': 'none' } }), false);
    assert.equal(isCrossSite({ headers: {} }), false);
    assert.equal(isCrossSite({ headers: { origin: 'http://h:1', host: 'h:1' } }), false);
  });

  it('flags requests a browser sends from another site or origin', () => {
    assert.equal(isCrossSite({ headers: { 'sec-fetch-site': 'cross-site' } }), true);
    assert.equal(isCrossSite({ headers: { 'sec-fetch-site': 'same-site' } }), true);
    assert.equal(isCrossSite({ headers: { origin: 'http://evil.example', host: 'h:1' } }), true);
    assert.equal(isCrossSite({ headers: { origin: 'null', host: 'h:1' } }), true);
  });
});

describe('authenticate and guardWrites in an app', () => {
  let server: Server;
  let base: string;
  const serve = (allowActions: boolean): express.Express => {
    const app = express();
    app.use(authenticate({ kind: 'token', token: 'tok' }));
    app.use(guardWrites(allowActions));
    app.all('/thing', (_req, res) => {
      res.send('done');
    });
    return app;
  };
  const servers: Server[] = [];
  let writable: string;

  before(async () => {
    const start = (app: express.Express): Promise<Server> =>
      new Promise((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => {
          resolve(s);
        });
      });
    server = await start(serve(false));
    servers.push(server, await start(serve(true)));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writable = `http://127.0.0.1:${(servers[1]!.address() as AddressInfo).port}`;
  });

  after(() => {
    for (const s of servers) s.close();
  });

  it('answers 401 with a basic-auth challenge without credentials', async () => {
    const res = await fetch(`${base}/thing`);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Basic realm="nodelet", charset="UTF-8"');
  });

  it('serves reads with the token', async () => {
    const res = await fetch(`${base}/thing`, { headers: { authorization: 'Bearer tok' } });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'done');
  });

  it('refuses writes while read-only, even with the token', async () => {
    const res = await fetch(`${base}/thing`, { method: 'PUT', headers: { authorization: 'Bearer tok' } });
    assert.equal(res.status, 403);
  });

  it('checks credentials before saying anything about writes', async () => {
    const res = await fetch(`${base}/thing`, { method: 'PUT' });
    assert.equal(res.status, 401);
  });

  it('allows same-origin writes and refuses cross-site ones when actions are allowed', async () => {
    const ok = await fetch(`${writable}/thing`, { method: 'PUT', headers: { authorization: basic('u', 'tok') } });
    assert.equal(ok.status, 200);
    const cross = await fetch(`${writable}/thing`, { method: 'PUT', headers: { authorization: basic('u', 'tok'), origin: 'http://elsewhere.example' } });
    assert.equal(cross.status, 403);
  });
});
