/**
 * The streaming routes over the real node server (TLS on loopback, client certificate), with a
 * stub runtime whose streaming URLs point at a fake streaming server on 127.0.0.1
 * (test/doubles/fake-stream-upstream.ts) that upgrades and echoes in upper case. Proves: the
 * client's upgrade reaches the runtime's URL with only the upgrade headers; the 101 and then
 * bytes flow both ways (early bytes too); closing either side closes the other; the kubelet's
 * refusals (400 parameters, 404 pod, 500 container, 500 `Upgrade request required`, runtime
 * NotFound 404); the runtime's refusal relayed with its body; a non-101 success is 500; a
 * non-loopback URL is never dialled; port-forward's sandbox and ports; attach's tty from the
 * spec; `/run`'s combined output and its failure; `stop()` ends open sessions.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import type { V1Pod } from '@kubernetes/client-node';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { pino } from 'pino';
import { CriError, CriNotFoundError } from '../cri/errors.js';
import type { Container, ContainerFilter, ExecSyncResult, PodSandbox, PodSandboxFilter, StreamOptions } from '../cri/types.js';
import { FakeAccessReviewer, FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { FakeStreamUpstream, REFUSAL_BODY } from '../test/doubles/fake-stream-upstream.js';
import { systemClock } from '../util/clock.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import { nodeRoutes } from './handlers.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import type { StreamRuntime } from './streaming.js';
import { makeCertificate } from '../kube/certificates/x509.js';

const now = new Date();
const later = new Date(Date.now() + 3600_000);
const clientCa = makeCertificate({ subject: { commonName: 'client-ca' }, isCa: true, notBefore: now, notAfter: later });
const serving = makeCertificate({ subject: { commonName: 'node-1' }, altNames: ['127.0.0.1'], usages: ['serverAuth'], isCa: true, notBefore: now, notAfter: later });
const apiServer = makeCertificate({ subject: { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] }, usages: ['clientAuth'], notBefore: now, notAfter: later, issuer: clientCa });

const POD: V1Pod = {
  metadata: { namespace: 'ns', name: 'web', uid: 'uid-1' },
  spec: { containers: [{ name: 'app' }, { name: 'term', tty: true, stdin: true }] },
};

type Call = { method: 'exec'; id: string; cmd: readonly string[]; streams: StreamOptions } | { method: 'attach'; id: string; streams: StreamOptions } | { method: 'portForward'; id: string; ports: readonly number[] } | { method: 'execSync'; id: string; cmd: readonly string[] };

/** Running containers `app` and `term` of uid-1; two ready sandboxes (the newer one is `s-new`). */
class StubStreamRuntime implements StreamRuntime {
  readonly calls: Call[] = [];
  url = '';
  failWith: Error | undefined;
  execResult: ExecSyncResult = { stdout: Buffer.from('out\n'), stderr: Buffer.from('err\n'), exitCode: 0 };

  listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const labels = filter?.labelSelector ?? {};
    const running = ['app', 'term'].includes(labels['io.kubernetes.container.name'] ?? '') && labels['io.kubernetes.pod.uid'] === 'uid-1' && filter?.state === 'CONTAINER_RUNNING';
    const name = labels['io.kubernetes.container.name'] ?? '';
    return Promise.resolve(running ? [{ id: `c-${name}`, podSandboxId: 's', metadata: { name, attempt: 0 }, image: { image: 'x' }, imageRef: 'x', state: 'CONTAINER_RUNNING', createdAt: 1n, labels, annotations: {} }] : []);
  }

  listPodSandbox(filter?: PodSandboxFilter): Promise<PodSandbox[]> {
    if (filter?.state !== 'SANDBOX_READY' || filter.labelSelector?.['io.kubernetes.pod.uid'] !== 'uid-1') return Promise.resolve([]);
    const sandbox = (id: string, createdAt: bigint): PodSandbox => ({ id, metadata: { name: 'web', uid: 'uid-1', namespace: 'ns', attempt: 0 }, state: 'SANDBOX_READY', createdAt, labels: {}, annotations: {}, runtimeHandler: '' });
    return Promise.resolve([sandbox('s-old', 1n), sandbox('s-new', 2n)]);
  }

  exec(id: string, cmd: readonly string[], streams: StreamOptions): Promise<string> {
    this.calls.push({ method: 'exec', id, cmd, streams });
    return this.answer();
  }

  attach(id: string, streams: StreamOptions): Promise<string> {
    this.calls.push({ method: 'attach', id, streams });
    return this.answer();
  }

  portForward(id: string, ports: readonly number[]): Promise<string> {
    this.calls.push({ method: 'portForward', id, ports });
    return this.answer();
  }

  execSync(id: string, cmd: readonly string[]): Promise<ExecSyncResult> {
    this.calls.push({ method: 'execSync', id, cmd });
    return Promise.resolve(this.execResult);
  }

  containerStatus(): Promise<never> {
    return Promise.reject(new Error('container logs are not tested here'));
  }

  private answer(): Promise<string> {
    return this.failWith === undefined ? Promise.resolve(this.url) : Promise.reject(this.failWith);
  }
}

/** A raw TLS connection to the node server as the API server: send a head, read what comes back. */
class RawClient {
  private received = Buffer.alloc(0);
  ended = false;

  private constructor(readonly socket: TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
    });
    socket.on('end', () => {
      this.ended = true;
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number): Promise<RawClient> {
    const socket = connect({ host: '127.0.0.1', port, ca: serving.certPem, cert: apiServer.certPem, key: apiServer.keyPem });
    await once(socket, 'secureConnect');
    return new RawClient(socket);
  }

  text(): string {
    return this.received.toString('latin1');
  }

  /** Waits until what was received satisfies `done` (or the connection closed). */
  async waitFor(done: (text: string) => boolean, what: string): Promise<string> {
    for (let i = 0; i < 200; i += 1) {
      if (done(this.text())) return this.text();
      if (this.socket.closed) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.ok(done(this.text()), `${what}; received ${JSON.stringify(this.text())}`);
    return this.text();
  }

  async closed(): Promise<void> {
    if (!this.socket.closed) await once(this.socket, 'close');
  }
}

const SPDY_HEAD = (method: string, target: string, extra: readonly string[] = []): string =>
  [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io', 'X-Stream-Protocol-Version: v3.channel.k8s.io', 'Authorization: Bearer secret-token', 'X-Other: no', ...extra, '', ''].join('\r\n');

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(check(), what);
}

describe('exec, attach, port-forward and run through the node server', () => {
  const upstream = new FakeStreamUpstream();
  const runtime = new StubStreamRuntime();
  let server: NodeServer;
  let port = 0;

  before(async () => {
    await upstream.start();
    runtime.url = upstream.url('/exec/tok123');
    server = createNodeServer({
      address: '127.0.0.1',
      port: 0,
      certPem: serving.certPem,
      keyPem: serving.keyPem,
      clientCaPem: clientCa.certPem,
      authenticator: new Authenticator(new FakeTokenReviewer(new Map()), systemClock),
      authorizer: new NodeAuthorizer(new FakeAccessReviewer(() => true), 'node-1', systemClock),
      routes: nodeRoutes({
        pods: { list: () => [POD] },
        runtime,
        clock: systemClock,
        followPollMs: 20,
        proxyTimeoutMs: 2000,
        runTimeoutSeconds: 5,
      }),
      logger: pino({ level: 'silent' }),
    });
    port = await server.start();
  });

  after(async () => {
    await server.stop();
    await upstream.stop();
  });

  it('proxies an exec upgrade: only upgrade headers reach the runtime, the 101 comes back, bytes flow both ways, early bytes included', async () => {
    const before = upstream.requests.length;
    runtime.calls.length = 0;
    const client = await RawClient.open(port);
    client.socket.write(`${SPDY_HEAD('POST', '/exec/ns/web/app?command=sh&command=-c&command=echo+hi&input=1&output=1&error=1&tty=1')}early`);
    await client.waitFor((t) => t.includes('EARLY'), 'the early bytes are echoed');
    assert.match(client.text(), /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(client.text(), /X-Stream-Protocol-Version: v4\.channel\.k8s\.io/);
    client.socket.write('hello over spdy');
    await client.waitFor((t) => t.endsWith('HELLO OVER SPDY'), 'the echo of what the client sent');
    // The runtime was asked once, for the running container, with tty dropping stderr (the kubelet's rule).
    assert.deepEqual(runtime.calls, [{ method: 'exec', id: 'c-app', cmd: ['sh', '-c', 'echo hi'], streams: { stdin: true, stdout: true, stderr: false, tty: true } }]);
    assert.equal(upstream.requests.length, before + 1);
    const got = upstream.requests.at(-1);
    assert.equal(got?.requestLine, 'POST /exec/tok123 HTTP/1.1');
    assert.deepEqual(got?.headers, [`Host: ${new URL(runtime.url).host}`, 'Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io', 'X-Stream-Protocol-Version: v3.channel.k8s.io']);
    client.socket.end();
    await client.closed();
    await waitUntil(() => upstream.openConnections === 0, 'the runtime side is closed when the client leaves');
  });

  it('ends the client when the runtime closes, after the bytes it sent last', async () => {
    const client = await RawClient.open(port);
    client.socket.write(SPDY_HEAD('POST', '/exec/ns/web/app?command=true&output=1'));
    await client.waitFor((t) => t.includes('\r\n\r\n'), 'the 101');
    client.socket.write('last words');
    await client.waitFor((t) => t.endsWith('LAST WORDS'), 'the echo');
    await upstream.stop().catch(() => undefined);
    await client.closed();
    assert.ok(client.ended, 'the client got an orderly end');
    await upstream.start();
    runtime.url = upstream.url('/exec/tok123');
  });

  it('answers a plain (non-upgrade) exec 500 Upgrade request required, as the kubelet, without asking the runtime', async () => {
    runtime.calls.length = 0;
    const client = await RawClient.open(port);
    client.socket.write('GET /exec/ns/web/app?command=ls&output=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await client.closed();
    assert.match(client.text(), /^HTTP\/1\.1 500 /);
    assert.ok(client.text().endsWith('\r\n\r\nUpgrade request required'), client.text());
    assert.equal(runtime.calls.length, 0);
  });

  it("refuses as the kubelet: no stream 400, unknown pod 404, no running container 500, the runtime's NotFound 404", async () => {
    const ask = async (target: string): Promise<string> => {
      const client = await RawClient.open(port);
      client.socket.write(SPDY_HEAD('POST', target));
      await client.closed();
      return client.text();
    };
    const status = (text: string): string => `${text.slice(9, 12)} ${text.slice(text.indexOf('\r\n\r\n') + 4)}`;
    assert.equal(status(await ask('/exec/ns/web/app?command=ls')), '400 you must specify at least 1 of stdin, stdout, stderr');
    assert.equal(status(await ask('/exec/ns/nope/app?command=ls&output=1')), '404 pod does not exist');
    assert.equal(status(await ask('/exec/ns/web/gone?command=ls&output=1')), '500 container not found ("gone")');
    assert.equal(status(await ask('/exec/ns/web/other-uid/app?command=ls&output=1')), '500 container not found ("app")');
    assert.equal(status(await ask('/attach/ns/web/gone?output=1')), '500 container gone not found in pod web_ns');
    runtime.failWith = new CriNotFoundError({ method: 'Exec', code: GrpcStatus.NOT_FOUND, message: 'container "c-app" not found' });
    assert.equal(status(await ask('/exec/ns/web/app?command=ls&output=1')), '404 Exec: container "c-app" not found');
    runtime.failWith = new CriError({ method: 'Exec', code: GrpcStatus.RESOURCE_EXHAUSTED, message: 'maximum number of in-flight requests exceeded' });
    const busy = await ask('/exec/ns/web/app?command=ls&output=1');
    assert.equal(status(busy), '429 Exec: maximum number of in-flight requests exceeded');
    assert.match(busy, /\r\nRetry-After: 60\r\n/);
    runtime.failWith = undefined;
  });

  it("relays the runtime's refusal of the upgrade with its body, then closes both sides", async () => {
    upstream.mode = 'refuse';
    try {
      const client = await RawClient.open(port);
      client.socket.write(SPDY_HEAD('GET', '/exec/ns/web/app?command=ls&output=1'));
      await client.closed();
      assert.match(client.text(), /^HTTP\/1\.1 404 Not Found\r\n/);
      assert.ok(client.text().endsWith(`\r\n\r\n${REFUSAL_BODY}`), client.text());
      await waitUntil(() => upstream.openConnections === 0, 'the runtime connection is closed');
    } finally {
      upstream.mode = 'upgrade';
    }
  });

  it('answers 500 invalid upgrade response when the runtime answers a plain 200', async () => {
    upstream.mode = 'ok';
    try {
      const client = await RawClient.open(port);
      client.socket.write(SPDY_HEAD('GET', '/exec/ns/web/app?command=ls&output=1'));
      await client.closed();
      assert.match(client.text(), /^HTTP\/1\.1 500 /);
      assert.ok(client.text().endsWith('invalid upgrade response: status code 200'), client.text());
    } finally {
      upstream.mode = 'upgrade';
    }
  });

  it('never dials a streaming URL off loopback: 500, the upstream sees nothing', async () => {
    const before = upstream.requests.length;
    const url = runtime.url;
    runtime.url = 'http://192.0.2.1:10010/exec/tok';
    try {
      const client = await RawClient.open(port);
      client.socket.write(SPDY_HEAD('GET', '/exec/ns/web/app?command=ls&output=1'));
      await client.closed();
      assert.match(client.text(), /^HTTP\/1\.1 500 [^]*is not on a loopback address: not dialled$/);
      assert.equal(upstream.requests.length, before);
    } finally {
      runtime.url = url;
    }
  });

  it("attaches with the container's tty from its spec; port-forwards into the newest ready sandbox, ports only from a WebSocket query", async () => {
    runtime.calls.length = 0;
    const session = async (head: string): Promise<void> => {
      const client = await RawClient.open(port);
      client.socket.write(head);
      await client.waitFor((t) => t.startsWith('HTTP/1.1 101'), 'the 101');
      client.socket.destroy();
    };
    await session(SPDY_HEAD('POST', '/attach/ns/web/term?input=1&output=1'));
    await session(SPDY_HEAD('POST', '/portForward/ns/web?port=8080'));
    const ws = ['GET /portForward/ns/web/uid-1?port=8080,9090&port=81 HTTP/1.1', 'Host: x', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Protocol: v4.channel.k8s.io', '', ''].join('\r\n');
    await session(ws);
    assert.deepEqual(runtime.calls, [
      { method: 'attach', id: 'c-term', streams: { stdin: true, stdout: true, stderr: false, tty: true } },
      { method: 'portForward', id: 's-new', ports: [] },
      { method: 'portForward', id: 's-new', ports: [8080, 9090, 81] },
    ]);
    assert.ok(upstream.requests.at(-1)?.headers.includes('Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='), 'the WebSocket handshake headers are forwarded');
    const client = await RawClient.open(port);
    client.socket.write(SPDY_HEAD('POST', '/portForward/ns/web/uid-2'));
    await client.closed();
    assert.ok(client.text().startsWith('HTTP/1.1 404 ') && client.text().endsWith('pod not found'), client.text());
  });

  it('runs /run as ExecSync: stdout then stderr, 200; a failing command 500 with its exit code; GET is 405', async () => {
    const post = async (target: string, method = 'POST'): Promise<string> => {
      const client = await RawClient.open(port);
      client.socket.write(`${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      await client.closed();
      return client.text();
    };
    runtime.calls.length = 0;
    const ok = await post('/run/ns/web/app?cmd=cat%20/etc/hostname');
    assert.match(ok, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(ok, /\r\nContent-Type: application\/json\r\n/);
    assert.ok(ok.endsWith('\r\n\r\nout\nerr\n'), ok);
    assert.deepEqual(runtime.calls, [{ method: 'execSync', id: 'c-app', cmd: ['cat', '/etc/hostname'] }]);
    runtime.execResult = { stdout: Buffer.alloc(0), stderr: Buffer.from('boom'), exitCode: 3 };
    const failed = await post('/run/ns/web/app?cmd=sh%20-c%20exit');
    assert.ok(failed.startsWith('HTTP/1.1 500 ') && failed.endsWith("command 'sh -c exit' exited with 3: boom"), failed);
    assert.match(await post('/run/ns/web/app?cmd=ls', 'GET'), /^HTTP\/1\.1 405 /);
  });

  it('ends open sessions on stop(), on both sides', { timeout: 10_000 }, async () => {
    const client = await RawClient.open(port);
    client.socket.write(SPDY_HEAD('POST', '/exec/ns/web/app?command=sh&input=1'));
    await client.waitFor((t) => t.startsWith('HTTP/1.1 101'), 'the 101');
    assert.equal(upstream.openConnections, 1);
    await server.stop();
    await client.closed();
    await waitUntil(() => upstream.openConnections === 0, 'the runtime side is closed on stop');
  });
});
