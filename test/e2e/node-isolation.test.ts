/**
 * What one node's credentials can reach, against the real API server (Node authorizer, RBAC,
 * NodeRestriction, the chart's ValidatingAdmissionPolicy) and the real CSR path: two agents' pods
 * on two hosts (Node objects of this cluster with no agent: a pod bound to them is enough for a
 * bound token), each agent's credentials obtained exactly as the chart's agent obtains them
 * (kube/node-identity.ts with its pod's bound token, approved by the approver of approver/ running
 * with the chart's approver RBAC, signed by the controller-manager). Then, with the credentials of
 * node A, everything A's own pods need works and each step toward node B, another namespace's
 * secrets or the cluster is refused with 403; a certificate for B's name is never issued to A.
 * The matrix is printed as a table.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubernetesObject, V1CertificateSigningRequest, V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { CsrApprover } from '../../approver/approver.js';
import { makeCsr } from '../../kube/certificates/csr.js';
import { KubeClient, PatchType } from '../../kube/client.js';
import { loadKubeconfigFile, type KubeEndpoint } from '../../kube/kubeconfig.js';
import { CLIENT_SIGNER, CLIENT_USAGES, establishNodeIdentity, type NodeIdentity } from '../../kube/node-identity.js';
import { KubeTransport } from '../../kube/transport.js';
import { KubeApiError } from '../../util/api-errors.js';
import { systemClock } from '../../util/clock.js';
import { CHART_DIR, helm, parseManifests } from '../integration/helm-chart-helpers.js';
import { eventually, kubectl, requireCluster } from './helpers.js';

const SUFFIX = randomBytes(3).toString('hex');
const RELEASE = `iso-${SUFFIX}`;
const FULLNAME = `${RELEASE}-nodelet`;
const AGENTS_NS = `iso-agents-${SUFFIX}`;
const WORK_NS = `iso-work-${SUFFIX}`;
const HOST_A = `iso-host-a-${SUFFIX}`;
const HOST_B = `iso-host-b-${SUFFIX}`;
const NODE_A = `${HOST_A}-nodelet`;
const NODE_B = `${HOST_B}-nodelet`;
const PAUSE = 'registry.k8s.io/pause:3.10';
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** Cluster-scoped objects this suite made (deleted in after()). */
const made: { kind: string; name: string }[] = [];
const dirs: string[] = [];
const identities: NodeIdentity[] = [];
let approver: CsrApprover | undefined;
let admin: KubeClient;
let adminEndpoint: KubeEndpoint;

function clientWith(endpoint: KubeEndpoint): KubeClient {
  return new KubeClient(new KubeTransport(endpoint, systemClock));
}

function withToken(token: string): KubeEndpoint {
  return { server: adminEndpoint.server, ...(adminEndpoint.ca === undefined ? {} : { ca: adminEndpoint.ca }), token, insecureSkipTlsVerify: false };
}

async function create(kind: string, object: object, apiPath: string): Promise<void> {
  await admin.create(apiPath, object);
  const name = (object as KubernetesObject).metadata?.name ?? '';
  if (!apiPath.includes('/namespaces/')) made.push({ kind, name });
}

/** A pod that never runs (its host has no agent): what the Node authorizer's graph and bound tokens need. */
function parkedPod(name: string, namespace: string, nodeName: string, extra: { serviceAccountName?: string; secret?: string; automount?: boolean } = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName,
      ...(extra.serviceAccountName === undefined ? {} : { serviceAccountName: extra.serviceAccountName }),
      // A workload pod keeps its token volume: a node may request tokens only for the audiences its pods' volumes name.
      automountServiceAccountToken: extra.automount === true,
      tolerations: [{ operator: 'Exists' }],
      containers: [{ name: 'main', image: PAUSE, ...(extra.secret === undefined ? {} : { volumeMounts: [{ name: 's', mountPath: '/s' }] }) }],
      ...(extra.secret === undefined ? {} : { volumes: [{ name: 's', secret: { secretName: extra.secret } }] }),
    },
  };
}

/** A token bound to `pod` for `serviceAccount`, as the kubelet projects one into the pod. */
async function boundToken(client: KubeClient, namespace: string, serviceAccount: string, pod: string): Promise<string> {
  const live = await admin.get<V1Pod>(`/api/v1/namespaces/${namespace}/pods/${pod}`);
  const answer = await client.create<{ status: { token: string } }>(`/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod, uid: live.metadata?.uid } },
  });
  return answer.status.token;
}

/** The node's credentials through the agent's own bootstrap, from its pod's bound token. */
async function nodeCredentials(nodeName: string, token: string): Promise<KubeClient> {
  const certDir = await mkdtemp(path.join(os.tmpdir(), 'iso-pki-'));
  dirs.push(certDir);
  const identity = await establishNodeIdentity({ nodeName, bootstrap: withToken(token), certDir, rotate: false, clock: systemClock, random: Math.random, logger, pollMs: 200 });
  identities.push(identity);
  return clientWith(identity.endpoint);
}

type Outcome = 'allowed' | 'refused';
interface Case {
  readonly action: string;
  readonly expect: Outcome;
  readonly run: () => Promise<unknown>;
}

/** What the API server answered: allowed (2xx) or refused (403) and why; anything else is reported as its status. */
interface Answer {
  /** An {@link Outcome}, or `HTTP <status>` for anything else. */
  readonly got: string;
  readonly why: string;
}

function messageOf(body: unknown): string {
  return typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string' ? body.message : '';
}

async function outcomeOf(run: () => Promise<unknown>): Promise<Answer> {
  try {
    await run();
    return { got: 'allowed', why: '' };
  } catch (error) {
    if (error instanceof KubeApiError) return { got: error.code === 403 ? 'refused' : `HTTP ${String(error.code)}`, why: messageOf(error.body) };
    throw error;
  }
}

/** Creates a CSR for `nodeName` with `client` and waits for an approver's verdict. */
async function csrVerdict(client: KubeClient, nodeName: string): Promise<V1CertificateSigningRequest> {
  const { csrPem } = makeCsr({ subject: { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] }, altNames: [] });
  const created = await client.create<V1CertificateSigningRequest>('/apis/certificates.k8s.io/v1/certificatesigningrequests', {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: `iso-${SUFFIX}-` },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: CLIENT_SIGNER, usages: [...CLIENT_USAGES] },
  });
  const name = created.metadata?.name ?? '';
  made.push({ kind: 'csr', name });
  return eventually(`a verdict on ${name}`, async () => {
    const csr = await admin.get<V1CertificateSigningRequest>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`);
    return (csr.status?.conditions ?? []).length > 0 ? csr : undefined;
  }, 30_000);
}

describe('node isolation: what the credentials of one nodelet node reach', { timeout: 240_000 }, () => {
  let nodeA: KubeClient;
  let nodeB: KubeClient;
  let bootstrapTokenA = '';

  before(async () => {
    requireCluster();
    adminEndpoint = loadKubeconfigFile(process.env.KUBECONFIG ?? '');
    admin = clientWith(adminEndpoint);
    // The chart's RBAC and admission policy, as installed.
    const rendered = await helm(['template', RELEASE, CHART_DIR, '--namespace', AGENTS_NS, '--show-only', 'templates/rbac.yaml']);
    assert.equal(rendered.code, 0, rendered.stderr);
    for (const object of parseManifests(rendered.stdout)) {
      await kubectl(['apply', '-f', '-'], JSON.stringify(object));
      made.push({ kind: `${object.kind ?? ''}.${(object.apiVersion ?? '').split('/')[0] ?? ''}`, name: object.metadata?.name ?? '' });
    }
    for (const namespace of [AGENTS_NS, WORK_NS]) await create('namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, '/api/v1/namespaces');
    for (const sa of [FULLNAME, `${FULLNAME}-approver`]) await admin.create(`/api/v1/namespaces/${AGENTS_NS}/serviceaccounts`, { metadata: { name: sa } });
    for (const sa of ['work-a', 'work-b', 'work-none']) await admin.create(`/api/v1/namespaces/${WORK_NS}/serviceaccounts`, { metadata: { name: sa } });
    for (const secret of ['secret-a', 'secret-b', 'secret-none']) await admin.create(`/api/v1/namespaces/${WORK_NS}/secrets`, { metadata: { name: secret }, stringData: { key: secret } });
    // Two hosts, each with the chart's agent pod bound to it.
    for (const host of [HOST_A, HOST_B]) {
      await create('node', { apiVersion: 'v1', kind: 'Node', metadata: { name: host }, spec: { taints: [{ key: 'nodelet.dev/iso', effect: 'NoSchedule' }] } }, '/api/v1/nodes');
      await admin.create(`/api/v1/namespaces/${AGENTS_NS}/pods`, parkedPod(`agent-${host}`, AGENTS_NS, host, { serviceAccountName: FULLNAME }));
    }
    // The approver, with the chart's approver rights only.
    const approverToken = (await kubectl(['create', 'token', `${FULLNAME}-approver`, '-n', AGENTS_NS, '--duration', '1h'])).trim();
    approver = new CsrApprover({ kube: clientWith(withToken(approverToken)), policy: { agentServiceAccounts: [`system:serviceaccount:${AGENTS_NS}:${FULLNAME}`], nodeNameSuffix: '-nodelet' }, clock: systemClock, logger });
    await approver.start();
    bootstrapTokenA = await boundToken(admin, AGENTS_NS, FULLNAME, `agent-${HOST_A}`);
    const bootstrapTokenB = await boundToken(admin, AGENTS_NS, FULLNAME, `agent-${HOST_B}`);
    [nodeA, nodeB] = await Promise.all([nodeCredentials(NODE_A, bootstrapTokenA), nodeCredentials(NODE_B, bootstrapTokenB)]);
    // Each node registers itself, its Lease and its NodeAgent, as the agent does.
    for (const [client, node] of [[nodeA, NODE_A], [nodeB, NODE_B]] as const) {
      await client.create('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'nodelet.dev/agent': 'true' } }, spec: { taints: [{ key: 'nodelet.dev/iso', effect: 'NoSchedule' }] } });
      made.push({ kind: 'node', name: node });
      await client.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', { metadata: { name: node }, spec: { holderIdentity: node, leaseDurationSeconds: 40 } });
      made.push({ kind: 'lease.coordination.k8s.io', name: node });
      await client.create('/apis/nodelet.dev/v1alpha1/nodeagents', { apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: node }, spec: {} });
      made.push({ kind: 'nodeagent.nodelet.dev', name: node });
    }
    // The admission plugin loads a new policy and binding from a watch: wait until it is in force (a
    // dry run changes nothing), so a write let through below is the policy's failure, not its lag.
    await eventually('the NodeAgent policy in force', async () => {
      const answer = await outcomeOf(() => nodeA.create('/apis/nodelet.dev/v1alpha1/nodeagents', { apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: `iso-probe-${SUFFIX}` }, spec: {} }, { dryRun: 'All' }));
      return answer.got === 'refused' ? true : undefined;
    }, 60_000);
    // One workload pod on each node, each with its own secret and service account.
    await admin.create(`/api/v1/namespaces/${WORK_NS}/pods`, parkedPod('pod-a', WORK_NS, NODE_A, { serviceAccountName: 'work-a', secret: 'secret-a', automount: true }));
    await admin.create(`/api/v1/namespaces/${WORK_NS}/pods`, parkedPod('pod-b', WORK_NS, NODE_B, { serviceAccountName: 'work-b', secret: 'secret-b', automount: true }));
  });

  after(async () => {
    await approver?.stop();
    for (const identity of identities) identity.stop();
    await kubectl(['delete', 'pods', '--all', '-n', WORK_NS, '--force', '--grace-period=0', '--ignore-not-found']).catch(() => undefined);
    await kubectl(['delete', 'pods', '--all', '-n', AGENTS_NS, '--force', '--grace-period=0', '--ignore-not-found']).catch(() => undefined);
    // What a refused case would have made, had it been let through.
    made.push({ kind: 'nodeagent.nodelet.dev', name: `iso-other-${SUFFIX}` });
    for (const { kind, name } of made.reverse()) {
      const namespaced = kind === 'lease.coordination.k8s.io' ? ['-n', 'kube-node-lease'] : [];
      await kubectl(['delete', kind, name, ...namespaced, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    }
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("issues each agent its own node's certificate from its pod's bound token, and records who asked", async () => {
    const list = await admin.get<{ items: V1CertificateSigningRequest[] }>('/apis/certificates.k8s.io/v1/certificatesigningrequests');
    const ours = list.items.filter((c) => (c.metadata?.name ?? '').startsWith(`nodelet-client-${NODE_A}-`));
    assert.equal(ours.length, 1, 'one request for node A');
    const [csr] = ours;
    assert.equal(csr?.spec.username, `system:serviceaccount:${AGENTS_NS}:${FULLNAME}`);
    assert.deepEqual(csr?.spec.extra?.['authentication.kubernetes.io/node-name'], [HOST_A]);
    assert.ok((csr?.status?.conditions ?? []).some((c) => c.type === 'Approved' && c.status === 'True'));
    const review = await nodeA.create<{ status: { userInfo: { username: string; groups: string[] } } }>('/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    assert.equal(review.status.userInfo.username, `system:node:${NODE_A}`);
    assert.ok(review.status.userInfo.groups.includes('system:nodes'));
  });

  it("lets node A do what its own pods need and refuses every step toward node B's objects, other secrets and the cluster", async () => {
    const podB = await admin.get<V1Pod>(`/api/v1/namespaces/${WORK_NS}/pods/pod-b`);
    const statusPatch = { status: { conditions: [{ type: 'nodelet.dev/Isolation', status: 'True' }] } };
    const ownAgent = async (name: string): Promise<unknown> => {
      const agent = await admin.get<KubernetesObject>(`/apis/nodelet.dev/v1alpha1/nodeagents/${name}`);
      return nodeA.replace(`/apis/nodelet.dev/v1alpha1/nodeagents/${name}/status`, { ...agent, status: { observedGeneration: 1 } });
    };
    const nodeUids = new Map<string, string>();
    for (const node of [NODE_A, NODE_B]) nodeUids.set(node, (await admin.get<KubernetesObject>(`/api/v1/nodes/${node}`)).metadata?.uid ?? '');
    // As the agent makes one (controllers/pod-sources/mirror-pods.ts): annotated, owned by its Node.
    const mirrorPod = (node: string): object => ({
      ...parkedPod(`mirror-${node}`, WORK_NS, node),
      metadata: { name: `mirror-${node}`, namespace: WORK_NS, annotations: { 'kubernetes.io/config.mirror': 'x' }, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUids.get(node), controller: true }] },
    });
    const cases: Case[] = [
      { action: "get a Secret A's pod uses", expect: 'allowed', run: () => nodeA.get(`/api/v1/namespaces/${WORK_NS}/secrets/secret-a`) },
      { action: "token for the ServiceAccount of A's pod, bound to it", expect: 'allowed', run: () => boundToken(nodeA, WORK_NS, 'work-a', 'pod-a') },
      { action: "list the pods bound to A", expect: 'allowed', run: () => nodeA.get('/api/v1/pods', { fieldSelector: `spec.nodeName=${NODE_A}` }) },
      { action: 'patch Node A', expect: 'allowed', run: () => nodeA.patch(`/api/v1/nodes/${NODE_A}`, { metadata: { labels: { 'nodelet.dev/iso': 'yes' } } }, PatchType.merge) },
      { action: "renew A's Lease", expect: 'allowed', run: () => nodeA.patch(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE_A}`, { spec: { renewTime: new Date().toISOString().replace('Z', '000Z') } }, PatchType.merge) },
      { action: "write the status of A's pod", expect: 'allowed', run: () => nodeA.patch(`/api/v1/namespaces/${WORK_NS}/pods/pod-a/status`, statusPatch, PatchType.strategicMerge) },
      { action: "write A's NodeAgent status", expect: 'allowed', run: () => ownAgent(NODE_A) },
      { action: 'create a mirror pod bound to A', expect: 'allowed', run: () => nodeA.create(`/api/v1/namespaces/${WORK_NS}/pods`, mirrorPod(NODE_A)) },
      { action: "get a Secret only B's pod uses", expect: 'refused', run: () => nodeA.get(`/api/v1/namespaces/${WORK_NS}/secrets/secret-b`) },
      { action: 'get a Secret no pod uses', expect: 'refused', run: () => nodeA.get(`/api/v1/namespaces/${WORK_NS}/secrets/secret-none`) },
      { action: 'list all pods cluster-wide', expect: 'refused', run: () => nodeA.get('/api/v1/pods') },
      { action: 'list the pods bound to B', expect: 'refused', run: () => nodeA.get('/api/v1/pods', { fieldSelector: `spec.nodeName=${NODE_B}` }) },
      { action: 'token for a ServiceAccount no pod of A uses', expect: 'refused', run: () => nodeA.create(`/api/v1/namespaces/${WORK_NS}/serviceaccounts/work-none/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [] } }) },
      { action: "token for B's pod's ServiceAccount, bound to it", expect: 'refused', run: () => boundToken(nodeA, WORK_NS, 'work-b', 'pod-b') },
      { action: 'token for a kube-system ServiceAccount', expect: 'refused', run: () => nodeA.create('/api/v1/namespaces/kube-system/serviceaccounts/default/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [] } }) },
      { action: 'patch Node B', expect: 'refused', run: () => nodeA.patch(`/api/v1/nodes/${NODE_B}`, { metadata: { labels: { 'nodelet.dev/iso': 'yes' } } }, PatchType.merge) },
      { action: "patch Node B's status", expect: 'refused', run: () => nodeA.patch(`/api/v1/nodes/${NODE_B}/status`, { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Spoofed' }] } }, PatchType.strategicMerge) },
      { action: "renew B's Lease", expect: 'refused', run: () => nodeA.patch(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE_B}`, { spec: { holderIdentity: NODE_A } }, PatchType.merge) },
      { action: "write B's NodeAgent status", expect: 'refused', run: () => ownAgent(NODE_B) },
      { action: 'create a NodeAgent of another name', expect: 'refused', run: () => nodeA.create('/apis/nodelet.dev/v1alpha1/nodeagents', { apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: `iso-other-${SUFFIX}` }, spec: {} }) },
      { action: "write the status of B's pod", expect: 'refused', run: () => nodeA.patch(`/api/v1/namespaces/${WORK_NS}/pods/pod-b/status`, statusPatch, PatchType.strategicMerge) },
      { action: "delete B's pod", expect: 'refused', run: () => nodeA.delete(`/api/v1/namespaces/${WORK_NS}/pods/pod-b`, { preconditions: { uid: podB.metadata?.uid } }) },
      { action: 'create a (non-mirror) pod', expect: 'refused', run: () => nodeA.create(`/api/v1/namespaces/${WORK_NS}/pods`, parkedPod('made-by-a', WORK_NS, NODE_A)) },
      { action: 'create a mirror pod bound to B', expect: 'refused', run: () => nodeA.create(`/api/v1/namespaces/${WORK_NS}/pods`, mirrorPod(NODE_B)) },
      { action: 'list Secrets of a namespace', expect: 'refused', run: () => nodeA.get(`/api/v1/namespaces/${WORK_NS}/secrets`) },
    ];
    const rows: { action: string; expected: Outcome; got: string; why: string }[] = [];
    // The allowed ones first, each until it passes: the Node authorizer learns the pods' references
    // from a watch. Once they pass, the graph knows A's pods, so a refusal below is a rule, not lag.
    for (const c of cases.filter((x) => x.expect === 'allowed')) {
      const answer = await eventually(`node A may: ${c.action}`, async () => {
        const a = await outcomeOf(c.run);
        return a.got === 'allowed' ? a : undefined;
      }, 30_000).catch(async () => outcomeOf(c.run));
      rows.push({ action: c.action, expected: c.expect, ...answer });
    }
    for (const c of cases.filter((x) => x.expect === 'refused')) rows.push({ action: c.action, expected: c.expect, ...(await outcomeOf(c.run)) });
    console.log(`\nnode A = ${NODE_A}, node B = ${NODE_B}, with the credentials node A's agent uses:\n${formatTable(rows)}`);
    assert.deepEqual(rows.filter((r) => r.got !== r.expected), [], 'every case as expected');
    assert.equal(rows.length, cases.length);
  });

  it("never issues a certificate for node B's name to node A: with A's bootstrap token or with A's node certificate", async () => {
    // The bootstrap token: the API server takes the request; the approver denies it.
    const csr = await csrVerdict(clientWith(withToken(bootstrapTokenA)), NODE_B);
    assert.deepEqual((csr.status?.conditions ?? []).map((c) => [c.type, c.reason]), [['Denied', 'NodeNameMismatch']], JSON.stringify(csr.status));
    assert.equal(csr.status?.certificate, undefined);
    // The node certificate: NodeRestriction refuses a node's request for another node's name outright.
    const answer = await outcomeOf(() => csrVerdict(nodeA, NODE_B));
    assert.equal(answer.got, 'refused', answer.why);
    assert.match(answer.why, new RegExp(`can only create a node CSR with CN=system:node:${NODE_A}`));
    // And no later approval: the controller-manager leaves the denied one alone too.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const later = await admin.get<V1CertificateSigningRequest>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${csr.metadata?.name ?? ''}`);
    assert.equal((later.status?.conditions ?? []).some((x) => x.type === 'Approved'), false);
    assert.equal(later.status?.certificate, undefined);
  });
});

/** The matrix, one line per case; the API server's reason for a refusal, shortened, at the end. */
function formatTable(rows: readonly { action: string; expected: string; got: string; why: string }[]): string {
  const width = Math.max(...rows.map((r) => r.action.length));
  const line = (cells: readonly [string, string, string, string, string]): string => `  ${cells[0].padEnd(width)}  ${cells[1].padEnd(8)}  ${cells[2].padEnd(8)}  ${cells[3].padEnd(8)}  ${cells[4]}`;
  const short = (why: string): string => (why.length > 110 ? `${why.slice(0, 107)}...` : why);
  return [line(['action', 'expected', 'got', '', 'why (the API server)']), ...rows.map((r) => line([r.action, r.expected, r.got, r.got === r.expected ? 'ok' : 'MISMATCH', short(r.why)]))].join('\n');
}
