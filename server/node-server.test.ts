/**
 * The node server over real TLS on loopback: authentication (none, a certificate of another CA, a
 * good certificate, good and bad bearer tokens), authorization (a denial is the kubelet's 403),
 * routing, and the container logs route over a real log file, including a follow that ends when
 * the container stops. The API server's reviews are fakes (test/doubles/fake-access-review.ts).
 */
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Container, ContainerState, ContainerStatus } from '../cri/types.js';
import { FakeAccessReviewer, FakeTokenReviewer } from '../test/doubles/fake-access-review.js';
import { systemClock } from '../util/clock.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import type { LogRuntime } from './container-logs.js';
import type { StreamRuntime } from './streaming.js';
import { nodeRoutes } from './handlers.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import { makeCertificate, type CertificateAndKey } from '../kube/certificates/x509.js';

const now = new Date();
const later = new Date(Date.now() + 3600_000);
const clientCa = makeCertificate({ subject: { commonName: 'client-ca' }, isCa: true, notBefore: now, notAfter: later });
const otherCa = makeCertificate({ subject: { commonName: 'other-ca' }, isCa: true, notBefore: now, notAfter: later });
const serving = makeCertificate({ subject: { commonName: 'node-1' }, altNames: ['127.0.0.1'], usages: ['serverAuth'], isCa: true, notBefore: now, notAfter: later });
const clientOf = (issuer: CertificateAndKey, commonName = 'kube-apiserver-kubelet-client'): CertificateAndKey =>
  makeCertificate({ subject: { commonName, organizations: ['system:masters'] }, usages: ['clientAuth'], notBefore: now, notAfter: later, issuer });

interface Reply {
  readonly status: number;
  readonly body: string;
}

function get(port: number, urlPath: string, auth: { cert?: CertificateAndKey; token?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        ca: serving.certPem,
        ...(auth.cert === undefined ? {} : { cert: auth.cert.certPem, key: auth.cert.keyPem }),
        headers: auth.token === undefined ? {} : { Authorization: `Bearer ${auth.token}` },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const POD: V1Pod = { metadata: { namespace: 'ns', name: 'web', uid: 'uid-1' }, spec: { containers: [{ name: 'app' }] } };
const T = (s: number): string => `2026-11-24T04:00:${String(s).padStart(2, '0')}.000000000Z`;

/** A runtime with one container instance per entry (newest last), whose state a test changes. */
class StubRuntime implements LogRuntime, StreamRuntime {
  readonly instances: { id: string; attempt: number; state: ContainerState; logPath: string; beforeStatus?: () => Promise<void> }[] = [];
  /** containerStatus calls per container ID (a follower asks on each look at the file's end). */
  readonly statusCalls = new Map<string, number>();

  listContainers(): Promise<Container[]> {
    return Promise.resolve(
      this.instances.map((i) => ({ id: i.id, podSandboxId: 's', metadata: { name: 'app', attempt: i.attempt }, image: { image: 'x' }, imageRef: 'x', state: i.state, createdAt: BigInt(i.attempt), labels: {}, annotations: {} })),
    );
  }

  containerStatus(id: string): Promise<ContainerStatus> {
    const i = this.instances.find((c) => c.id === id);
    this.statusCalls.set(id, (this.statusCalls.get(id) ?? 0) + 1);
    if (i === undefined) return Promise.reject(new Error('not found'));
    const status = { id, state: i.state, logPath: i.logPath } as ContainerStatus;
    return (i.beforeStatus?.() ?? Promise.resolve()).then(() => status);
  }

  // Streaming is tested in streaming.test.ts.
  listPodSandbox = (): Promise<never> => Promise.reject(new Error('not used here'));
  execSync = (): Promise<never> => Promise.reject(new Error('not used here'));
  exec = (): Promise<never> => Promise.reject(new Error('not used here'));
  attach = (): Promise<never> => Promise.reject(new Error('not used here'));
  portForward = (): Promise<never> => Promise.reject(new Error('not used here'));
}

describe('the node server over TLS on loopback', () => {
  let dir = '';
  let port = 0;
  let server: NodeServer;
  const tokens = new FakeTokenReviewer(new Map([['good-token', { name: 'system:serviceaccount:ns:reader', groups: ['system:serviceaccounts'] }]]));
  // Allowed: the API server's client (system:masters), and the reader for everything but nodes/proxy.
  const access = new FakeAccessReviewer((a) => a.user.groups.includes('system:masters') || a.subresource !== 'proxy');
  const runtime = new StubRuntime();

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'node-server-'));
    const logger = pino({ level: 'silent' });
    server = createNodeServer({
      address: '127.0.0.1',
      port: 0,
      certPem: serving.certPem,
      keyPem: serving.keyPem,
      clientCaPem: clientCa.certPem,
      authenticator: new Authenticator(tokens, systemClock),
      authorizer: new NodeAuthorizer(access, 'node-1', systemClock),
      routes: nodeRoutes({ pods: { list: () => [POD] }, runtime, clock: systemClock, followPollMs: 20, proxyTimeoutMs: 5000, runTimeoutSeconds: 5 }),
      logger,
    });
    port = await server.start();
  });

  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 401 Unauthorized without credentials, asking nobody', async () => {
    assert.deepEqual(await get(port, '/healthz'), { status: 401, body: 'Unauthorized' });
    assert.equal(access.asked.length, 0);
  });

  it('answers 401 to a certificate of another CA', async () => {
    assert.deepEqual(await get(port, '/healthz', { cert: clientOf(otherCa) }), { status: 401, body: 'Unauthorized' });
    assert.equal(access.asked.length, 0);
  });

  it('serves a client certificate of the client CA as its CN and O groups, after asking for nodes/healthz', async () => {
    assert.deepEqual(await get(port, '/healthz', { cert: clientOf(clientCa) }), { status: 200, body: 'ok' });
    assert.deepEqual(access.asked.map((a) => [a.user.name, a.user.groups, a.verb, a.subresource, a.node]), [['kube-apiserver-kubelet-client', ['system:masters'], 'get', 'healthz', 'node-1']]);
  });

  it('reviews a bearer token once (then cached), and answers 401 to an unknown one', async () => {
    tokens.asked.length = 0;
    assert.equal((await get(port, '/healthz', { token: 'good-token' })).status, 200);
    assert.equal((await get(port, '/healthz', { token: 'good-token' })).status, 200);
    assert.deepEqual(await get(port, '/healthz', { token: 'bad-token' }), { status: 401, body: 'Unauthorized' });
    assert.deepEqual(tokens.asked, ['good-token', 'bad-token']);
  });

  it("answers 403 with the kubelet's message when the review denies", async () => {
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app', { token: 'good-token' }), {
      status: 403,
      body: 'Forbidden (user=system:serviceaccount:ns:reader, verb=get, resource=nodes, subresource=[proxy])',
    });
  });

  it('answers 404 for an unknown path only after authorization, and 500 when the review fails', async () => {
    assert.deepEqual(await get(port, '/nope'), { status: 401, body: 'Unauthorized' });
    assert.equal((await get(port, '/nope', { cert: clientOf(clientCa) })).status, 404);
    // Another user: the first one's allow is cached (5 minutes) and would not ask again.
    access.failWith = new Error('api down');
    const failed = await get(port, '/nope', { cert: clientOf(clientCa, 'someone-else') });
    access.failWith = undefined;
    assert.deepEqual(failed, { status: 500, body: 'Authorization error (user=someone-else, verb=get, resource=nodes, subresource=proxy)' });
  });

  it('lists the pods as a PodList', async () => {
    const reply = await get(port, '/pods', { cert: clientOf(clientCa) });
    assert.equal(reply.status, 200);
    assert.deepEqual(JSON.parse(reply.body), { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [POD] });
  });

  it("serves a container's log, with the kubelet's errors for unknown pods, containers and previous instances", async () => {
    const log0 = path.join(dir, '0.log');
    const log1 = path.join(dir, '1.log');
    await writeFile(log0, `${T(1)} stdout F first run\n`);
    await writeFile(log1, `${T(2)} stdout F one\n${T(3)} stderr P tw\n${T(3)} stderr F o\n${T(4)} stdout F three\n`);
    const cert = clientOf(clientCa);
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app', { cert }), { status: 400, body: 'container "app" in pod "web" is waiting to start: ContainerCreating' });
    runtime.instances.push({ id: 'c0', attempt: 0, state: 'CONTAINER_EXITED', logPath: log0 });
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app?previous=true', { cert }), { status: 400, body: 'previous terminated container "app" in pod "web" not found' });
    runtime.instances.push({ id: 'c1', attempt: 1, state: 'CONTAINER_EXITED', logPath: log1 });
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app', { cert }), { status: 200, body: 'one\ntwo\nthree\n' });
    // The tail counts the file's lines, a partial piece as one, as the kubelet's does.
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app?tailLines=3&timestamps=true', { cert }), { status: 200, body: `${T(3)} two\n${T(4)} three\n` });
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app?tailLines=1', { cert }), { status: 200, body: 'three\n' });
    assert.deepEqual(await get(port, '/containerLogs/ns/web/app?previous=true', { cert }), { status: 200, body: 'first run\n' });
    assert.deepEqual(await get(port, '/containerLogs/ns/other/app', { cert }), { status: 404, body: 'pod "other" does not exist' });
    assert.deepEqual(await get(port, '/containerLogs/ns/web/nope', { cert }), { status: 404, body: 'container "nope" not found in pod "web"' });
    assert.equal((await get(port, '/containerLogs/ns/web/app?tailLines=-1', { cert })).status, 422);
  });

  it('follows a running container until it stops, then ends with everything it wrote', async () => {
    const log2 = path.join(dir, '2.log');
    await writeFile(log2, `${T(5)} stdout F before\n`);
    const instance: StubRuntime['instances'][number] = { id: 'c2', attempt: 2, state: 'CONTAINER_RUNNING', logPath: log2 };
    runtime.instances.push(instance);
    const reply = get(port, '/containerLogs/ns/web/app?follow=true', { cert: clientOf(clientCa) });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await appendFile(log2, `${T(6)} stdout F during\n`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    // The last line lands while the follower asks whether the container still runs (after it
    // found the end of the file): it must still read it, then end.
    instance.state = 'CONTAINER_EXITED';
    instance.beforeStatus = () => appendFile(log2, `${T(7)} stdout F last\n`);
    assert.deepEqual(await reply, { status: 200, body: 'before\nduring\nlast\n' });
  });

  it('stops following at once when the client goes away', async () => {
    const log3 = path.join(dir, '3.log');
    await writeFile(log3, `${T(8)} stdout F hello\n`);
    runtime.instances.push({ id: 'c3', attempt: 3, state: 'CONTAINER_RUNNING', logPath: log3 });
    const cert = clientOf(clientCa);
    const received = await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/containerLogs/ns/web/app?follow=true', ca: serving.certPem, cert: cert.certPem, key: cert.keyPem, agent: false }, (res) => {
        res.once('data', (c: Buffer) => {
          // The first line arrived: the follower is waiting at the end of the file. Hang up.
          req.destroy();
          resolve(c.toString());
        });
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code !== 'ECONNRESET') reject(e);
      });
      req.end();
    });
    assert.equal(received, 'hello\n');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const asked = runtime.statusCalls.get('c3') ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // At a 20 ms poll a follower still running would have asked about 15 more times.
    assert.equal(runtime.statusCalls.get('c3') ?? 0, asked, 'the follower kept polling after the client left');
  });
});
