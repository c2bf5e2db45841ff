/**
 * Each probe kind against a real server on loopback (HTTP, TCP, gRPC health) or the recording fake
 * runtime (exec): what counts as success, and what a failure says.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Server, ServerCredentials, status as GrpcStatus, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { ExecSyncResult, RuntimeService } from '../../cri/types.js';
import { decodeHealthCheckResponse, encodeHealthCheckRequest } from './grpc-health.js';
import type { ProbeAction, ProbeSettings } from './probe-spec.js';
import { MAX_PROBE_OUTPUT_BYTES, PROBE_USER_AGENT, resolvePort, runProbe, type ProbeTarget } from './run-probe.js';

const target: ProbeTarget = { containerId: 'c1', podIp: '127.0.0.1', container: { name: 'app', ports: [{ name: 'http', containerPort: 0 }] } };

function settings(action: ProbeAction, timeoutMs = 1000): ProbeSettings {
  return { type: 'readiness', action, initialDelayMs: 0, periodMs: 1000, timeoutMs, successThreshold: 1, failureThreshold: 3 };
}

function execRuntime(answer: (cmd: readonly string[]) => ExecSyncResult): RuntimeService {
  return { execSync: (_id: string, cmd: readonly string[]) => Promise.resolve(answer(cmd)) } as unknown as RuntimeService;
}

const noRuntime = execRuntime(() => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 }));

describe('exec probes', () => {
  it('succeed on exit code 0 and fail otherwise, keeping the output', async () => {
    const ok = await runProbe({ runtime: execRuntime(() => ({ stdout: Buffer.from('fine'), stderr: Buffer.alloc(0), exitCode: 0 })) }, settings({ kind: 'exec', command: ['true'] }), target);
    assert.deepEqual(ok, { result: 'success', output: 'fine' });
    const bad = await runProbe({ runtime: execRuntime(() => ({ stdout: Buffer.from('out '), stderr: Buffer.from('err'), exitCode: 1 })) }, settings({ kind: 'exec', command: ['false'] }), target);
    assert.deepEqual(bad, { result: 'failure', output: 'out err' });
  });

  it('cut their output to 10 KiB', async () => {
    const big = await runProbe({ runtime: execRuntime(() => ({ stdout: Buffer.alloc(50_000, 'x'), stderr: Buffer.alloc(0), exitCode: 1 })) }, settings({ kind: 'exec', command: ['x'] }), target);
    assert.equal(Buffer.byteLength(big.output), MAX_PROBE_OUTPUT_BYTES);
  });

  it('fail when the runtime call fails', async () => {
    const runtime = { execSync: () => Promise.reject(new Error('container not running')) } as unknown as RuntimeService;
    assert.deepEqual(await runProbe({ runtime }, settings({ kind: 'exec', command: ['x'] }), target), { result: 'failure', output: 'container not running' });
  });
});

describe('httpGet probes', () => {
  let server: http.Server;
  let port = 0;
  const seen: http.IncomingHttpHeaders[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      if (req.url === '/slow') return; // never answers
      const redirects: Record<string, string> = { '/redirect': '/ok', '/to-boom': '/boom', '/loop': '/loop', '/away': 'http://0.0.0.0/' };
      const location = redirects[req.url ?? ''];
      if (location !== undefined) {
        res.writeHead(302, { Location: location });
        res.end(`<a href="${location}">Found</a>.`);
        return;
      }
      const code = req.url === '/ok' ? 200 : req.url === '/not-modified' ? 304 : 500;
      res.writeHead(code);
      res.end(code === 304 ? undefined : 'body');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const get = (path: string, extra: Partial<Extract<ProbeAction, { kind: 'httpGet' }>> = {}): ProbeAction => ({ kind: 'httpGet', scheme: 'HTTP', host: '', port, path, headers: [], ...extra });

  it('succeed on 2xx and 3xx, with the kubelet user agent and any headers given', async () => {
    assert.equal((await runProbe({ runtime: noRuntime }, settings(get('/ok', { headers: [{ name: 'X-Probe', value: 'yes' }] })), target)).result, 'success');
    assert.equal(seen.at(-1)?.['user-agent'], PROBE_USER_AGENT);
    assert.equal(seen.at(-1)?.['x-probe'], 'yes');
  });

  it('follow a redirect to the same host, as the kubelet: the redirected answer decides, with no warning', async () => {
    const count = seen.length;
    assert.deepEqual(await runProbe({ runtime: noRuntime }, settings(get('/redirect')), target), { result: 'success', output: 'body' });
    assert.equal(seen.length - count, 2, 'the redirect and the page it names');
    assert.deepEqual(await runProbe({ runtime: noRuntime }, settings(get('/to-boom')), target), { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  });

  it('stop after 10 redirects with a failure', async () => {
    const count = seen.length;
    const loop = await runProbe({ runtime: noRuntime }, settings(get('/loop')), target);
    assert.equal(loop.result, 'failure');
    assert.match(loop.output, /stopped after 10 redirects/);
    assert.equal(seen.length - count, 10);
  });

  it('do not follow a redirect to another host, and succeed with the "Probe terminated redirects" warning', async () => {
    const count = seen.length;
    const away = await runProbe({ runtime: noRuntime }, settings(get('/away')), target);
    assert.equal(seen.length - count, 1, 'nothing requested from 0.0.0.0');
    assert.deepEqual(away, { result: 'success', output: '<a href="http://0.0.0.0/">Found</a>.', warning: 'Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.' });
    const notModified = await runProbe({ runtime: noRuntime }, settings(get('/not-modified')), target);
    assert.deepEqual(notModified, { result: 'success', output: '', warning: 'Probe terminated redirects, Response body: ' }, 'a 3xx that is no redirect to follow');
  });

  it('fail on 5xx naming the status code', async () => {
    assert.deepEqual(await runProbe({ runtime: noRuntime }, settings(get('/boom')), target), { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  });

  it('fail on timeout and on a refused connection', async () => {
    const slow = await runProbe({ runtime: noRuntime }, settings(get('/slow'), 300), target);
    assert.equal(slow.result, 'failure');
    assert.match(slow.output, /deadline exceeded/);
    const closed = await runProbe({ runtime: noRuntime }, settings(get('/ok', { port: 1 })), target);
    assert.equal(closed.result, 'failure');
    assert.match(closed.output, /ECONNREFUSED/);
  });

  it('resolve a named port from the container, and report an unknown port as unknown', async () => {
    const named = { ...target, container: { name: 'app', ports: [{ name: 'http', containerPort: port }] } };
    assert.equal((await runProbe({ runtime: noRuntime }, settings(get('/ok', { port: 'http' })), named)).result, 'success');
    assert.equal((await runProbe({ runtime: noRuntime }, settings(get('/ok', { port: 'nope' })), named)).result, 'unknown');
    assert.equal(resolvePort('8080', named.container), 8080);
  });
});

describe('tcpSocket probes', () => {
  it('succeed when the port accepts a connection, fail when refused', async () => {
    const server = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    assert.equal((await runProbe({ runtime: noRuntime }, settings({ kind: 'tcpSocket', host: '', port }), target)).result, 'success');
    server.close();
    const refused = await runProbe({ runtime: noRuntime }, settings({ kind: 'tcpSocket', host: '', port }), target);
    assert.equal(refused.result, 'failure');
    assert.match(refused.output, new RegExp(`^dial tcp 127.0.0.1:${port}: `));
  });
});

describe('grpc probes', () => {
  const grpcUserAgents: string[] = [];
  let server: Server;
  let port = 0;
  before(async () => {
    server = new Server();
    const statuses: Record<string, number> = { '': 1, down: 2 };
    server.register(
      '/grpc.health.v1.Health/Check',
      (call: ServerUnaryCall<{ service: string }, number>, callback: sendUnaryData<number>) => {
        grpcUserAgents.push(String(call.metadata.get('user-agent')[0] ?? ''));
        const status = statuses[call.request.service];
        if (status === undefined) callback({ code: GrpcStatus.NOT_FOUND, details: 'unknown service' });
        else callback(null, status);
      },
      (status: number) => Buffer.from(status === 0 ? [] : [0x08, status]),
      // The request's service name (field 1, length-delimited); an object, as grpc-js's server
      // takes a falsy request for a missing one.
      (buf: Buffer) => ({ service: buf.length === 0 ? '' : buf.subarray(2).toString('utf8') }),
      'unary',
    );
    port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
        if (error) reject(error);
        else resolve(bound);
      });
    });
  });
  after(() => {
    server.forceShutdown();
  });

  it('succeed when the service is SERVING, fail with the kubelet message otherwise', async () => {
    assert.equal((await runProbe({ runtime: noRuntime }, settings({ kind: 'grpc', port, service: '' }), target)).result, 'success');
    assert.match(grpcUserAgents.at(-1) ?? '', new RegExp(`^${PROBE_USER_AGENT} grpc-node-js/`), 'the kubelet\'s probe agent first');
    assert.deepEqual(await runProbe({ runtime: noRuntime }, settings({ kind: 'grpc', port, service: 'down' }), target), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
  });

  it('fail when nothing listens', async () => {
    const outcome = await runProbe({ runtime: noRuntime }, settings({ kind: 'grpc', port: 1, service: '' }, 500), target);
    assert.equal(outcome.result, 'failure');
    assert.match(outcome.output, /^timeout: /);
  });

  it('encode and decode the health messages', () => {
    assert.deepEqual([...encodeHealthCheckRequest('svc')], [0x0a, 3, 0x73, 0x76, 0x63]);
    assert.equal(decodeHealthCheckResponse(Buffer.from([0x08, 0x02])), 2);
    assert.equal(decodeHealthCheckResponse(Buffer.alloc(0)), 0);
  });
});
