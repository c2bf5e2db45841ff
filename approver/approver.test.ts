import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { V1CertificateSigningRequest, V1Node } from '@kubernetes/client-node';
import { pino } from 'pino';
import { makeCsr } from '../kube/certificates/csr.js';
import { createFakeClock, type FakeClock } from '../test/doubles/fake-clock.js';
import { FakeCertificatesApi, type RecordedRequest } from '../test/doubles/fake-certificates-api.js';
import { CsrApprover, CSR_PATH } from './approver.js';
import { CLIENT_SIGNER, SERVING_SIGNER, TOKEN_EXTRA } from './decide.js';

const AGENT = 'system:serviceaccount:nodelet:nodelet';
const POLICY = { agentServiceAccounts: [AGENT], nodeNameSuffix: '-nodelet' };
const START = Date.parse('2030-01-01T00:00:00Z');
const BACKOFF = { initialMs: 1000, maxMs: 8000 };
const RESYNC_MS = 60_000;

/** Polls real time until `condition` holds (the fake API answers over real sockets). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Lets real I/O in flight finish, for asserting that something did not happen. */
async function quiet(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
}

interface CsrOptions {
  readonly username?: string;
  readonly groups?: readonly string[];
  readonly host?: string;
  readonly signerName?: string;
  readonly usages?: readonly string[];
  readonly commonName?: string;
  readonly altNames?: readonly string[];
  readonly request?: string;
}

/** A CSR object as the API server stores it for a request made with makeCsr. */
function csr(name: string, options: CsrOptions = {}): V1CertificateSigningRequest {
  const { csrPem } = makeCsr({ subject: { commonName: options.commonName ?? 'system:node:h1-nodelet', organizations: ['system:nodes'] }, altNames: options.altNames ?? [] });
  const host = options.host ?? 'h1';
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: {
      request: options.request ?? Buffer.from(csrPem).toString('base64'),
      signerName: options.signerName ?? CLIENT_SIGNER,
      usages: [...(options.usages ?? ['digital signature', 'client auth'])],
      username: options.username ?? AGENT,
      groups: [...(options.groups ?? ['system:serviceaccounts', 'system:serviceaccounts:nodelet', 'system:authenticated'])],
      extra: { [TOKEN_EXTRA.nodeName]: [host], [TOKEN_EXTRA.podName]: [`nodelet-${host}`], [TOKEN_EXTRA.podUid]: ['0b0c6a52-0000-4000-8000-000000000001'] },
    },
  };
}

function servingCsr(name: string, node: string, altNames: readonly string[]): V1CertificateSigningRequest {
  return csr(name, { signerName: SERVING_SIGNER, usages: ['digital signature', 'server auth'], username: `system:node:${node}`, groups: ['system:nodes', 'system:authenticated'], commonName: `system:node:${node}`, altNames });
}

function node(name: string, labelled: boolean): V1Node {
  return {
    metadata: { name, ...(labelled ? { labels: { 'nodelet.dev/agent': 'true' } } : {}) },
    status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }, { type: 'Hostname', address: 'h1' }] },
  };
}

interface Harness {
  readonly api: FakeCertificatesApi;
  readonly clock: FakeClock;
  readonly approver: CsrApprover;
  readonly logs: Record<string, unknown>[];
}

let current: { approver: CsrApprover; close: () => Promise<void> } | undefined;

async function setup(): Promise<Harness> {
  const api = new FakeCertificatesApi();
  await api.start();
  const clock = createFakeClock(START);
  const kube = api.client();
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => { logs.push(JSON.parse(line) as Record<string, unknown>); } });
  const approver = new CsrApprover({ kube, policy: POLICY, logger, clock, backoff: BACKOFF, resyncMs: RESYNC_MS });
  current = {
    approver,
    close: async () => {
      await approver.stop();
      kube.close();
      await api.close();
    },
  };
  return { api, clock, approver, logs };
}

afterEach(async () => {
  await current?.close();
  current = undefined;
});

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
  readonly lastUpdateTime: string;
}

function conditionsOf(request: RecordedRequest | undefined): Condition[] {
  return (request?.body as { status?: { conditions?: Condition[] } } | undefined)?.status?.conditions ?? [];
}

const csrReads = (api: FakeCertificatesApi, name: string): RecordedRequest[] => api.requests.filter((r) => r.method === 'GET' && r.path === `${CSR_PATH}/${name}`);
const nodeReads = (api: FakeCertificatesApi): string[] => api.requests.filter((r) => r.path.startsWith('/api/v1/nodes/')).map((r) => r.path);

describe('CsrApprover', () => {
  it("approves an agent's bootstrap request with one PUT of the request plus an Approved condition", async () => {
    const { api, approver } = await setup();
    const stored = api.addCsr(csr('csr-a'));
    await approver.start();
    await waitFor(() => api.approvals().length === 1, 'the approval');
    const [put] = api.approvals();
    assert.equal(put?.path, `${CSR_PATH}/csr-a/approval`);
    assert.equal(put?.status, 200);
    const body = put?.body as V1CertificateSigningRequest;
    assert.equal(body.metadata?.name, 'csr-a');
    assert.equal(body.metadata?.resourceVersion, stored.metadata?.resourceVersion, 'the write is conditional on the version decided on');
    assert.deepEqual(body.spec, stored.spec);
    const [condition, ...more] = conditionsOf(put);
    assert.deepEqual(more, []);
    assert.deepEqual({ ...condition, message: undefined }, { type: 'Approved', status: 'True', reason: 'NodeletAutoApproved', message: undefined, lastUpdateTime: '2030-01-01T00:00:00Z' });
    assert.match(condition?.message ?? '', /h1-nodelet/);
    assert.deepEqual(nodeReads(api), [], 'a client request needs no Node');
    await quiet();
    assert.equal(api.approvals().length, 1, 'its own Approved event is not decided again');
  });

  it('denies an agent asking for another node, seen through the watch, keeping the conditions it had', async () => {
    const { api, approver } = await setup();
    await approver.start();
    await waitFor(() => api.openWatches() === 1, 'the watch');
    const request = csr('csr-b', { commonName: 'system:node:h2-nodelet' });
    api.addCsr({ ...request, status: { conditions: [{ type: 'Example', status: 'True', reason: 'Other', message: 'kept' }] } });
    await waitFor(() => api.approvals().length === 1, 'the denial');
    const conditions = conditionsOf(api.approvals()[0]);
    assert.deepEqual(conditions.map((c) => [c.type, c.reason]), [['Example', 'Other'], ['Denied', 'NodeNameMismatch']]);
    assert.match(conditions[1]?.message ?? '', /"h2-nodelet".*"h1-nodelet"/);
    assert.deepEqual(api.csr('csr-b').status?.conditions?.map((c) => c.type), ['Example', 'Denied']);
  });

  it('writes nothing for requests it ignores, and reads a Node only for a serving request of a node', async () => {
    const { api, approver, logs } = await setup();
    api.setNode(node('kubelet-node', false));
    api.addCsr(csr('bootstrap-token', { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:authenticated'] }));
    api.addCsr(csr('other-signer', { signerName: 'example.com/signer' }));
    api.addCsr({ ...csr('already-approved'), status: { conditions: [{ type: 'Approved', status: 'True', reason: 'ByHand', message: 'ok' }] } });
    api.addCsr(servingCsr('real-kubelet', 'kubelet-node', ['10.0.0.1']));
    api.addCsr(servingCsr('no-such-node', 'gone', ['10.0.0.1']));
    // Decided in arrival order: once this one is written, every request before it was decided.
    api.addCsr(csr('marker'));
    await approver.start();
    await waitFor(() => api.approvals().length === 1, 'the marker');
    await quiet();
    assert.deepEqual(api.approvals().map((r) => r.path), [`${CSR_PATH}/marker/approval`]);
    assert.deepEqual(nodeReads(api).sort(), ['/api/v1/nodes/gone', '/api/v1/nodes/kubelet-node']);
    const ignored = logs.filter((l) => l.level === 20 && typeof l.csr === 'string').map((l) => [l.csr, l.reason]);
    assert.deepEqual(ignored.sort(), [['bootstrap-token', 'NotANodeletRequester'], ['no-such-node', 'NodeNotFound'], ['other-signer', 'UnknownSigner'], ['real-kubelet', 'NotANodeletNode']]);
  });

  it("approves a nodelet node's serving request for its own addresses after reading its Node", async () => {
    const { api, approver } = await setup();
    api.setNode(node('h1-nodelet', true));
    api.addCsr(servingCsr('serving', 'h1-nodelet', ['h1', '10.0.0.1']));
    api.addCsr(servingCsr('serving-foreign', 'h1-nodelet', ['10.0.0.2']));
    await approver.start();
    await waitFor(() => api.approvals().length === 2, 'both verdicts');
    assert.deepEqual(nodeReads(api), ['/api/v1/nodes/h1-nodelet', '/api/v1/nodes/h1-nodelet']);
    assert.deepEqual(api.approvals().map((r) => [r.path.split('/').at(-2), conditionsOf(r).at(-1)?.type, conditionsOf(r).at(-1)?.reason]), [
      ['serving', 'Approved', 'NodeletAutoApproved'],
      ['serving-foreign', 'Denied', 'AddressNotOwned'],
    ]);
  });

  it('on 409 Conflict reads the request again and writes its verdict on the new version', async () => {
    const { api, approver } = await setup();
    api.addCsr(csr('csr-c'));
    let raced = false;
    api.beforeApproval = (name) => {
      if (raced) return;
      raced = true;
      api.updateCsr(name, (c) => { c.metadata = { ...c.metadata, annotations: { touched: 'yes' } }; }, { silent: true });
    };
    await approver.start();
    await waitFor(() => api.approvals().some((r) => r.status === 200), 'the second write');
    const puts = api.approvals();
    assert.deepEqual(puts.map((r) => r.status), [409, 200]);
    assert.equal(csrReads(api, 'csr-c').length, 1, 'read again once, between the writes');
    const second = puts[1]?.body as V1CertificateSigningRequest;
    assert.equal(second.metadata?.annotations?.touched, 'yes', 'the second write carries the re-read object');
    assert.deepEqual(api.csr('csr-c').status?.conditions?.map((c) => c.type), ['Approved']);
  });

  it("after a conflict with someone else's verdict writes nothing more", async () => {
    const { api, approver } = await setup();
    api.addCsr(csr('csr-d'));
    let raced = false;
    api.beforeApproval = (name) => {
      if (raced) return;
      raced = true;
      api.updateCsr(name, (c) => { c.status = { conditions: [{ type: 'Denied', status: 'True', reason: 'ByHand', message: 'no' }] }; }, { silent: true });
    };
    await approver.start();
    await waitFor(() => csrReads(api, 'csr-d').length === 1, 'the re-read');
    await quiet();
    assert.deepEqual(api.approvals().map((r) => r.status), [409]);
    assert.deepEqual(api.csr('csr-d').status?.conditions?.map((c) => c.type), ['Denied']);
  });

  it('retries other failures with capped exponential backoff on its clock, then writes', async () => {
    const { api, approver, clock, logs } = await setup();
    const approval = (r: { method: string; path: string }): boolean => r.method === 'PUT' && r.path.endsWith('/approval');
    api.failNext(approval, 500);
    api.failNext(approval, 503, 'ServiceUnavailable');
    api.addCsr(csr('csr-e'));
    await approver.start();
    await waitFor(() => api.approvals().length === 1, 'the first attempt');
    await quiet();
    assert.equal(api.approvals().length, 1, 'no retry before the backoff');
    await clock.advance(999);
    await quiet();
    assert.equal(api.approvals().length, 1);
    await clock.advance(1);
    await waitFor(() => api.approvals().length === 2, 'the retry after 1 s');
    await clock.advance(1999);
    await quiet();
    assert.equal(api.approvals().length, 2, 'the second retry waits 2 s');
    await clock.advance(1);
    await waitFor(() => api.approvals().length === 3, 'the retry after 2 s');
    assert.deepEqual(api.approvals().map((r) => r.status), [500, 503, 200]);
    assert.deepEqual(api.csr('csr-e').status?.conditions?.map((c) => c.type), ['Approved']);
    assert.deepEqual(logs.filter((l) => l.level === 40).map((l) => [l.csr, l.failures, l.retryInMs]), [['csr-e', 1, 1000], ['csr-e', 2, 2000]]);
  });

  it('retries a failed Node read the same way', async () => {
    const { api, approver, clock } = await setup();
    api.setNode(node('h1-nodelet', true));
    api.failNext((r) => r.path === '/api/v1/nodes/h1-nodelet', 500);
    api.addCsr(servingCsr('serving', 'h1-nodelet', ['10.0.0.1']));
    await approver.start();
    await waitFor(() => nodeReads(api).length === 1, 'the failed read');
    await quiet();
    assert.equal(api.approvals().length, 0);
    await clock.advance(1000);
    await waitFor(() => api.approvals().length === 1, 'the approval');
    assert.equal(conditionsOf(api.approvals()[0]).at(-1)?.type, 'Approved');
  });

  it('decides open requests again on resync: a Node that got its label since', async () => {
    const { api, approver, clock } = await setup();
    api.setNode(node('h1-nodelet', false));
    api.addCsr(servingCsr('serving', 'h1-nodelet', ['10.0.0.1']));
    await approver.start();
    await waitFor(() => nodeReads(api).length === 1, 'the first decision');
    await quiet();
    assert.equal(api.approvals().length, 0, 'an unlabelled Node is not ours');
    api.setNode(node('h1-nodelet', true));
    await clock.advance(RESYNC_MS);
    await waitFor(() => api.approvals().length === 1, 'the approval');
    await clock.advance(RESYNC_MS);
    await quiet();
    assert.equal(nodeReads(api).length, 2, 'an approved request is not decided again');
  });

  it("looks again soon, with backoff, for a serving request's Node that is not registered yet", async () => {
    const { api, approver, clock } = await setup();
    api.addCsr(servingCsr('serving', 'h1-nodelet', ['10.0.0.1']));
    await approver.start();
    await waitFor(() => nodeReads(api).length === 1, 'the first look');
    await quiet();
    // Not there at 1 s either: the next look is 2 s after that, well before a resync.
    await clock.advance(1000);
    await waitFor(() => nodeReads(api).length === 2, 'the second look');
    await quiet();
    api.setNode(node('h1-nodelet', true));
    await clock.advance(1999);
    await quiet();
    assert.equal(api.approvals().length, 0, 'not before its backoff');
    await clock.advance(1);
    await waitFor(() => api.approvals().length === 1, 'the approval');
    assert.equal(conditionsOf(api.approvals()[0]).at(-1)?.type, 'Approved');
    await clock.advance(RESYNC_MS);
    await quiet();
    assert.equal(nodeReads(api).length, 3, 'an approved request is not looked at again');
  });

  it('denies requests it cannot parse and keeps deciding the next', async () => {
    const { api, approver } = await setup();
    api.addCsr(csr('not-base64', { request: 'this is not base64!' }));
    api.addCsr(csr('not-pem', { request: Buffer.from('hello').toString('base64') }));
    api.addCsr({ apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'no-spec' } } as V1CertificateSigningRequest);
    api.addCsr(csr('good'));
    await approver.start();
    await waitFor(() => api.approvals().length === 3, 'three verdicts');
    await quiet();
    assert.deepEqual(api.approvals().map((r) => [r.path.split('/').at(-2), conditionsOf(r).at(-1)?.reason]), [
      ['not-base64', 'InvalidRequest'],
      ['not-pem', 'InvalidRequest'],
      ['good', 'NodeletAutoApproved'],
    ]);
  });

  it('restarts the informer with backoff when listing fails', async () => {
    const { api, approver, clock } = await setup();
    api.failNext((r) => r.method === 'GET' && r.path === CSR_PATH && !r.watch, 500);
    api.addCsr(csr('csr-f'));
    await approver.start();
    await quiet();
    assert.equal(api.approvals().length, 0);
    await clock.advance(1000);
    await waitFor(() => api.approvals().length === 1, 'the approval after the relist');
  });

  it('stops watching and writes nothing after stop()', async () => {
    const { api, approver } = await setup();
    await approver.start();
    await waitFor(() => api.openWatches() === 1, 'the watch');
    await approver.stop();
    await waitFor(() => api.openWatches() === 0, 'the watch to close');
    api.addCsr(csr('late'));
    await quiet();
    assert.equal(api.approvals().length, 0);
  });
});
