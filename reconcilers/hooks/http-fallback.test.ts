/**
 * The kubelet's HTTPS→HTTP fallback of httpGet lifecycle hooks, against real loopback servers: a
 * plain HTTP server answering an HTTPS hook gets the request again over HTTP (Authorization
 * dropped), counted and reported by a `LifecycleHTTPFallback` event; a real HTTPS server is used
 * as is; a server answering something else than HTTP is no fallback.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RuntimeService } from '../../cri/types.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { RecordingEventRecorder } from '../../test/doubles/recording-event-recorder.js';
import type { HookAction } from './hook-spec.js';
import { httpGet, isHttpResponseToHttpsClient } from './http-get.js';
import { runHook, type HookRunnerDeps, type HookTarget } from './run-hook.js';

const target: HookTarget = { pod: basePod(), container: { name: 'app' }, containerId: 'c1', podIp: '127.0.0.1' };

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => { resolve((server.address() as net.AddressInfo).port); }));
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => { resolve(); }));
}

/** A self-signed certificate for 127.0.0.1 (openssl, as the CSR tests use it). */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodelet-hook-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=127.0.0.1', '-days', '1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function hook(port: number, headers: { name: string; value: string }[] = []): HookAction {
  return { kind: 'httpGet', scheme: 'HTTPS', host: '', port, path: '/quit', headers };
}

function deps(): { deps: HookRunnerDeps; events: RecordingEventRecorder; fallbacks: () => number } {
  let fallbacks = 0;
  const events = new RecordingEventRecorder();
  const runtime = {} as RuntimeService;
  return { deps: { runtime, clock: createFakeClock(), events, lifecycleMetrics: { httpFallback: () => { fallbacks += 1; } } }, events, fallbacks: () => fallbacks };
}

describe('httpGet hooks: HTTPS answered in plain HTTP', () => {
  const seen: http.IncomingHttpHeaders[] = [];
  let plain: http.Server;
  let plainPort = 0;
  before(async () => {
    plain = http.createServer((req, res) => {
      seen.push(req.headers);
      res.end('ok');
    });
    plainPort = await listen(plain);
  });
  after(async () => {
    plain.closeAllConnections();
    await close(plain);
  });

  it('is told apart by a typed error, from what the server sent (not the TLS error text)', async () => {
    await assert.rejects(httpGet({ url: `https://127.0.0.1:${plainPort}/`, headers: {}, timeoutMs: 5000 }), (error: unknown) => isHttpResponseToHttpsClient(error) && error.message === 'http: server gave HTTP response to HTTPS client');
    // Reads what it is sent (a socket that never reads never sees the client go, and close waits).
    const garbage = net.createServer((socket) => socket.resume().end('NOT-HTTP\r\n'));
    const port = await listen(garbage);
    await assert.rejects(httpGet({ url: `https://127.0.0.1:${port}/`, headers: {}, timeoutMs: 5000 }), (error: unknown) => !isHttpResponseToHttpsClient(error));
    await close(garbage);
  });

  it('retries over HTTP without Authorization: the hook succeeds, counted once, with the kubelet\'s Warning event', async () => {
    const { deps: d, events, fallbacks } = deps();
    const before = seen.length;
    const outcome = await runHook(d, { action: hook(plainPort, [{ name: 'Authorization', value: 'Bearer secret' }, { name: 'X-Hook', value: 'preStop' }]), target, timeoutSeconds: 5 });
    assert.deepEqual(outcome, { ok: true });
    assert.equal(seen.length, before + 1, 'one request reached the handler: the HTTP retry');
    assert.equal(seen.at(-1)?.authorization, undefined, 'Authorization dropped');
    assert.equal(seen.at(-1)?.['x-hook'], 'preStop', 'the other headers kept');
    assert.equal(fallbacks(), 1);
    assert.deepEqual(events.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'LifecycleHTTPFallback', `request to HTTPS lifecycle hook 127.0.0.1:${plainPort} got HTTP response, retry with HTTP succeeded`]]);
  });

  it('fails with the HTTPS error, nothing counted, when the HTTP retry fails too', async () => {
    // Answers the TLS hello in HTTP, then drops every real request.
    const liar = net.createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        if (chunk[0] === 0x16) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
        else socket.destroy();
        socket.resume();
      });
    });
    const port = await listen(liar);
    const { deps: d, events, fallbacks } = deps();
    const outcome = await runHook(d, { action: hook(port), target, timeoutSeconds: 5 });
    await close(liar);
    assert.deepEqual(outcome, { ok: false, message: `HTTP lifecycle hook (/quit) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "https://127.0.0.1:${port}/quit": http: server gave HTTP response to HTTPS client` });
    assert.equal(fallbacks(), 0);
    assert.deepEqual(events.events, []);
  });

  it('uses a real HTTPS server as is: no fallback', async () => {
    const secure = https.createServer(selfSigned(), (_req, res) => { res.end('ok'); });
    const port = await listen(secure);
    const { deps: d, events, fallbacks } = deps();
    assert.deepEqual(await runHook(d, { action: hook(port), target, timeoutSeconds: 5 }), { ok: true });
    secure.closeAllConnections();
    await close(secure);
    assert.equal(fallbacks(), 0);
    assert.deepEqual(events.events, []);
  });
});
