import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { apiStatusReason, isNotFound, KubeApiError } from '../util/api-errors.js';
import { createFakeClock, settle } from '../test/doubles/fake-clock.js';
import { KubeRequestTimeoutError, KubeTransport, WATCH_INACTIVITY_MS } from './transport.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('KubeTransport (against a local HTTP server)', () => {
  const seen: Seen[] = [];
  const watches: http.ServerResponse[] = [];
  let server: http.Server;
  let port = 0;
  const transport = (clock = createFakeClock()): KubeTransport => new KubeTransport({ server: `http://127.0.0.1:${port}`, token: 'secret', insecureSkipTlsVerify: false }, clock);

  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.searchParams.get('watch') === 'true') {
          if (url.searchParams.get('resourceVersion') === 'expired') {
            res.writeHead(410, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired' }));
            return;
          }
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          watches.push(res);
          return;
        }
        if (url.pathname.endsWith('/hang')) return;
        if (url.pathname.endsWith('/missing')) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'pods "missing" not found' }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: req.method }));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('sends the body as JSON with its patch media type and the bearer token, and parses the answer', async () => {
    const t = transport();
    const answer = await t.request<{ echoed: string }>({ method: 'PATCH', path: '/api/v1/nodes/n1/status', query: { dryRun: undefined, fieldManager: 'nodelet' }, body: { status: { phase: 'x' } }, contentType: 'application/strategic-merge-patch+json' });
    assert.deepEqual(answer, { echoed: 'PATCH' });
    const req = seen.at(-1);
    assert.equal(req?.url, '/api/v1/nodes/n1/status?fieldManager=nodelet');
    assert.equal(req.headers['content-type'], 'application/strategic-merge-patch+json');
    assert.equal(req.headers.authorization, 'Bearer secret');
    assert.equal(req.body, '{"status":{"phase":"x"}}');
    t.close();
  });

  it('reads a token file again once a minute, and keeps the last token while the file is unreadable', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'kube-token-'));
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, 'first\n');
    const clock = createFakeClock();
    const t = new KubeTransport({ server: `http://127.0.0.1:${port}`, tokenFile, insecureSkipTlsVerify: false }, clock);
    const authorization = async (): Promise<string | undefined> => {
      await t.request({ method: 'GET', path: '/api' });
      return seen.at(-1)?.headers.authorization;
    };
    try {
      assert.equal(await authorization(), 'Bearer first');
      await writeFile(tokenFile, 'rotated\n');
      assert.equal(await authorization(), 'Bearer first', 'within the minute the token read is reused');
      await clock.advance(60_000);
      assert.equal(await authorization(), 'Bearer rotated');
      await rm(tokenFile);
      await clock.advance(60_000);
      assert.equal(await authorization(), 'Bearer rotated');
    } finally {
      t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails a request the server never answers with a typed timeout, and the next request still goes through', async () => {
    const t = new KubeTransport({ server: `http://127.0.0.1:${port}`, insecureSkipTlsVerify: false }, createFakeClock(), { requestIdleTimeoutMs: 200 });
    const started = Date.now();
    await assert.rejects(t.request({ method: 'GET', path: '/api/v1/hang' }), KubeRequestTimeoutError);
    assert.ok(Date.now() - started < 5000);
    assert.deepEqual(await t.request({ method: 'GET', path: '/api' }), { echoed: 'GET' });
    t.close();
  });

  it('rejects a non-2xx answer with a KubeApiError carrying the status and the parsed Status body', async () => {
    const t = transport();
    const err: unknown = await t.request({ method: 'GET', path: '/api/v1/namespaces/d/pods/missing' }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof KubeApiError, String(err));
    assert.equal(err.code, 404);
    assert.equal(isNotFound(err), true);
    assert.equal(apiStatusReason(err), 'NotFound');
    assert.match(err.message, /GET \/api\/v1\/namespaces\/d\/pods\/missing: HTTP 404 \(pods "missing" not found\)/);
    t.close();
  });

  it('delivers watch events line by line, across chunk boundaries, and reports the end once', async () => {
    const t = transport();
    const events: string[] = [];
    const ends: unknown[] = [];
    await t.watch('/api/v1/pods', { resourceVersion: '5' }, { onEvent: (type, o) => events.push(`${type} ${JSON.stringify(o)}`), onDone: (err) => ends.push(err) });
    assert.match(seen.at(-1)?.url ?? '', /^\/api\/v1\/pods\?resourceVersion=5&watch=true$/);
    const res = watches.at(-1);
    assert.ok(res !== undefined);
    res.write('{"type":"ADDED","object":{"a":1}}\n{"type":"MODI');
    res.write('FIED","object":{"a":2}}\nnot json\n');
    res.end('{"type":"DELETED","object":{"a":3}}');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(events, ['ADDED {"a":1}', 'MODIFIED {"a":2}', 'DELETED {"a":3}']);
    assert.deepEqual(ends, [undefined]);
    t.close();
  });

  it("reports a refused watch's status through onDone, and never calls onDone for the caller's own abort", async () => {
    const t = transport();
    const ends: unknown[] = [];
    await t.watch('/api/v1/pods', { resourceVersion: 'expired' }, { onEvent: () => undefined, onDone: (err) => ends.push(err) });
    assert.equal(ends.length, 1);
    assert.ok(ends[0] instanceof KubeApiError && ends[0].code === 410);
    const aborted: unknown[] = [];
    const controller = await t.watch('/api/v1/pods', {}, { onEvent: () => undefined, onDone: (err) => aborted.push(err) });
    controller.abort();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(aborted.length, 0);
    t.close();
  });

  it('drops a watch silent for 30 s with a TimeoutError, and a watch that gets bytes lives on', async () => {
    const clock = createFakeClock();
    const t = transport(clock);
    const ends: unknown[] = [];
    await t.watch('/api/v1/pods', {}, { onEvent: () => undefined, onDone: (err) => ends.push(err) });
    const res = watches.at(-1);
    await clock.advance(WATCH_INACTIVITY_MS - 1000);
    res?.write('{"type":"BOOKMARK","object":{}}\n');
    await new Promise((r) => setTimeout(r, 50));
    await clock.advance(WATCH_INACTIVITY_MS - 1000);
    assert.equal(ends.length, 0, 'a bookmark re-arms the inactivity timer');
    await clock.advance(1000);
    await settle();
    assert.equal(ends.length, 1);
    assert.ok(ends[0] instanceof Error && ends[0].name === 'TimeoutError', String(ends[0]));
    t.close();
  });
});
