import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeCsr } from '../kube/certificates/csr.js';
import { InvalidCsrError, parseCsrPem, type ParsedCsr } from '../kube/certificates/csr-parse.js';
import {
  APPROVED_REASON,
  CLIENT_SIGNER,
  decideCsr,
  nodeToRead,
  SERVING_SIGNER,
  TOKEN_EXTRA,
  type CsrDecisionInput,
  type CsrRequestFacts,
  type NodeFacts,
} from './decide.js';

const AGENT = 'system:serviceaccount:nodelet:nodelet';
const POLICY = { agentServiceAccounts: [AGENT], nodeNameSuffix: '-nodelet' } as const;
const OPEN = { conditionTypes: [], hasCertificate: false } as const;
const SA_GROUPS = ['system:serviceaccounts', 'system:serviceaccounts:nodelet', 'system:authenticated'];
const NODE_GROUPS = ['system:nodes', 'system:authenticated'];

/** What a pod-bound token of the agent's pod on host h1 puts in spec.extra. */
const AGENT_EXTRA = {
  [TOKEN_EXTRA.nodeName]: ['h1'],
  [TOKEN_EXTRA.podName]: ['nodelet-x7k2p'],
  [TOKEN_EXTRA.podUid]: ['3f1c0b7e-0000-4000-8000-000000000001'],
  'authentication.kubernetes.io/node-uid': ['9d2e0c1a-0000-4000-8000-000000000002'],
};

const CLIENT_CSR: ParsedCsr = {
  commonNames: ['system:node:h1-nodelet'],
  organizations: ['system:nodes'],
  dnsNames: [],
  ipAddresses: [],
  emailAddresses: [],
  uris: [],
  otherNames: 0,
  signatureAlgorithm: '1.2.840.10045.4.3.2',
  signatureValid: true,
};

const BOOTSTRAP: CsrDecisionInput = {
  spec: { signerName: CLIENT_SIGNER, usages: ['digital signature', 'client auth'], username: AGENT, groups: SA_GROUPS, extra: AGENT_EXTRA },
  status: OPEN,
  parsed: CLIENT_CSR,
  policy: POLICY,
};

const RENEWAL: CsrDecisionInput = { ...BOOTSTRAP, spec: { ...BOOTSTRAP.spec, username: 'system:node:h1-nodelet', groups: NODE_GROUPS, extra: {} } };

const NODE: NodeFacts = {
  addresses: [
    { type: 'InternalIP', address: '10.0.0.1' },
    { type: 'InternalIP', address: 'FD00:0:0::1' },
    { type: 'ExternalIP', address: '203.0.113.7' },
    { type: 'Hostname', address: 'h1' },
    { type: 'InternalDNS', address: 'h1.internal.example' },
  ],
  hasAgentLabel: true,
};

const SERVING: CsrDecisionInput = {
  spec: { signerName: SERVING_SIGNER, usages: ['digital signature', 'server auth'], username: 'system:node:h1-nodelet', groups: NODE_GROUPS, extra: {} },
  status: OPEN,
  parsed: { ...CLIENT_CSR, dnsNames: ['h1', 'H1-nodelet', 'h1.internal.example'], ipAddresses: ['10.0.0.1', 'fd00::1', '203.0.113.7'] },
  policy: POLICY,
  node: NODE,
};

const spec = (base: CsrDecisionInput, patch: Partial<CsrRequestFacts>): CsrDecisionInput => ({ ...base, spec: { ...base.spec, ...patch } });
const parsed = (base: CsrDecisionInput, patch: Partial<ParsedCsr>): CsrDecisionInput => ({ ...base, parsed: { ...(base.parsed as ParsedCsr), ...patch } });
const extra = (patch: Record<string, string[] | undefined>): CsrDecisionInput => {
  const merged: Record<string, string[]> = {};
  for (const [key, value] of Object.entries({ ...AGENT_EXTRA, ...patch })) if (value !== undefined) merged[key] = value;
  return spec(BOOTSTRAP, { extra: merged });
};

interface Case {
  readonly name: string;
  readonly input: CsrDecisionInput;
  readonly verdict: 'approve' | 'deny' | 'ignore';
  readonly reason: string;
}

const CLIENT_CASES: readonly Case[] = [
  { name: 'a node renewing its own client certificate is approved', input: RENEWAL, verdict: 'approve', reason: APPROVED_REASON },
  { name: "a node asking for another node's client certificate is denied", input: parsed(RENEWAL, { commonNames: ['system:node:h2-nodelet'] }), verdict: 'deny', reason: 'NodeNameMismatch' },
  { name: "a kubelet's renewal (no nodelet suffix) is left to the cluster: ignored", input: parsed(spec(RENEWAL, { username: 'system:node:h1' }), { commonNames: ['system:node:h1'] }), verdict: 'ignore', reason: 'NotANodeletNode' },
  { name: 'with an empty suffix every node renewing is judged', input: { ...parsed(spec(RENEWAL, { username: 'system:node:h1' }), { commonNames: ['system:node:h1'] }), policy: { ...POLICY, nodeNameSuffix: '' } }, verdict: 'approve', reason: APPROVED_REASON },
  { name: 'a user named like a node but not in system:nodes is not a node: ignored', input: spec(RENEWAL, { groups: ['system:authenticated'] }), verdict: 'ignore', reason: 'NotANodeletRequester' },
  { name: 'the bare prefix system:node: names no node: ignored', input: spec(RENEWAL, { username: 'system:node:' }), verdict: 'ignore', reason: 'NotANodeletRequester' },
  { name: "an agent bootstrapping its own node's certificate is approved", input: BOOTSTRAP, verdict: 'approve', reason: APPROVED_REASON },
  { name: "an agent asking for another host's node is denied", input: parsed(BOOTSTRAP, { commonNames: ['system:node:h2-nodelet'] }), verdict: 'deny', reason: 'NodeNameMismatch' },
  { name: 'an agent asking for its host name without the suffix is denied', input: parsed(BOOTSTRAP, { commonNames: ['system:node:h1'] }), verdict: 'deny', reason: 'NodeNameMismatch' },
  { name: 'with an empty suffix the node is named as the host', input: { ...parsed(BOOTSTRAP, { commonNames: ['system:node:h1'] }), policy: { ...POLICY, nodeNameSuffix: '' } }, verdict: 'approve', reason: APPROVED_REASON },
  { name: 'with an empty suffix the suffixed name is not the node', input: { ...BOOTSTRAP, policy: { ...POLICY, nodeNameSuffix: '' } }, verdict: 'deny', reason: 'NodeNameMismatch' },
  { name: 'an agent token without a node-name claim is denied', input: extra({ [TOKEN_EXTRA.nodeName]: undefined }), verdict: 'deny', reason: 'NodeNameClaimMissing' },
  { name: 'an agent token with two node-name values is denied', input: extra({ [TOKEN_EXTRA.nodeName]: ['h1', 'h2'] }), verdict: 'deny', reason: 'NodeNameClaimMissing' },
  { name: 'an agent token with an empty node-name is denied', input: extra({ [TOKEN_EXTRA.nodeName]: [''] }), verdict: 'deny', reason: 'NodeNameClaimMissing' },
  { name: 'an agent token not bound to a pod (no pod name) is denied', input: extra({ [TOKEN_EXTRA.podName]: undefined }), verdict: 'deny', reason: 'NotPodBoundToken' },
  { name: 'an agent token not bound to a pod (no pod UID) is denied', input: extra({ [TOKEN_EXTRA.podUid]: undefined }), verdict: 'deny', reason: 'NotPodBoundToken' },
  { name: 'a client request with a DNS name is denied', input: parsed(BOOTSTRAP, { dnsNames: ['h1'] }), verdict: 'deny', reason: 'SubjectAltNamesNotAllowed' },
  { name: 'a client request with an IP address is denied', input: parsed(RENEWAL, { ipAddresses: ['10.0.0.1'] }), verdict: 'deny', reason: 'SubjectAltNamesNotAllowed' },
  { name: 'a client request with an e-mail address is denied', input: parsed(BOOTSTRAP, { emailAddresses: ['x@y'] }), verdict: 'deny', reason: 'SubjectAltNamesNotAllowed' },
  { name: 'a client request with a URI is denied', input: parsed(BOOTSTRAP, { uris: ['spiffe://x'] }), verdict: 'deny', reason: 'SubjectAltNamesNotAllowed' },
  { name: 'a client request with another kind of name is denied', input: parsed(BOOTSTRAP, { otherNames: 1 }), verdict: 'deny', reason: 'SubjectAltNamesNotAllowed' },
  { name: 'a client request for another group is denied', input: parsed(BOOTSTRAP, { organizations: ['system:masters'] }), verdict: 'deny', reason: 'InvalidOrganization' },
  { name: 'a client request for an extra group is denied', input: parsed(RENEWAL, { organizations: ['system:nodes', 'system:masters'] }), verdict: 'deny', reason: 'InvalidOrganization' },
  { name: 'a client request without an organization is denied', input: parsed(BOOTSTRAP, { organizations: [] }), verdict: 'deny', reason: 'InvalidOrganization' },
  { name: 'a client request with two common names is denied', input: parsed(BOOTSTRAP, { commonNames: ['system:node:h1-nodelet', 'system:node:h2-nodelet'] }), verdict: 'deny', reason: 'InvalidCommonName' },
  { name: 'a client request for a non-node name is denied', input: parsed(BOOTSTRAP, { commonNames: ['admin'] }), verdict: 'deny', reason: 'InvalidCommonName' },
  { name: 'a client request for an empty node name is denied', input: parsed(BOOTSTRAP, { commonNames: ['system:node:'] }), verdict: 'deny', reason: 'InvalidCommonName' },
  { name: 'a client request without client auth is denied', input: spec(BOOTSTRAP, { usages: ['digital signature'] }), verdict: 'deny', reason: 'InvalidUsages' },
  { name: 'a client request also asking for server auth is denied', input: spec(BOOTSTRAP, { usages: ['digital signature', 'client auth', 'server auth'] }), verdict: 'deny', reason: 'InvalidUsages' },
  { name: 'a client request with key encipherment (an RSA key) is approved', input: spec(BOOTSTRAP, { usages: ['digital signature', 'key encipherment', 'client auth'] }), verdict: 'approve', reason: APPROVED_REASON },
  { name: 'a client request whose signature does not verify is denied', input: parsed(BOOTSTRAP, { signatureValid: false }), verdict: 'deny', reason: 'InvalidSignature' },
  { name: 'an unparseable request from an agent is denied', input: { ...BOOTSTRAP, parsed: new InvalidCsrError('garbage') }, verdict: 'deny', reason: 'InvalidRequest' },
  { name: 'an unparseable request from a bootstrap token is ignored', input: { ...spec(BOOTSTRAP, { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers'] }), parsed: new InvalidCsrError('garbage') }, verdict: 'ignore', reason: 'NotANodeletRequester' },
  { name: "another service account's request is ignored", input: spec(BOOTSTRAP, { username: 'system:serviceaccount:nodelet:other' }), verdict: 'ignore', reason: 'NotANodeletRequester' },
  { name: "a bootstrap token's request is ignored", input: spec(BOOTSTRAP, { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:authenticated'] }), verdict: 'ignore', reason: 'NotANodeletRequester' },
];

const SERVING_CASES: readonly Case[] = [
  { name: "a nodelet node's request for its own addresses is approved", input: SERVING, verdict: 'approve', reason: APPROVED_REASON },
  { name: 'a serving request with key encipherment is approved', input: spec(SERVING, { usages: ['key encipherment', 'digital signature', 'server auth'] }), verdict: 'approve', reason: APPROVED_REASON },
  { name: 'a serving request for a foreign IP is denied', input: parsed(SERVING, { ipAddresses: ['10.0.0.1', '10.0.0.2'] }), verdict: 'deny', reason: 'AddressNotOwned' },
  { name: 'a serving request for an IP the Node lists only as a host name is denied', input: { ...parsed(SERVING, { ipAddresses: ['10.0.0.9'] }), node: { ...NODE, addresses: [...NODE.addresses, { type: 'Hostname', address: '10.0.0.9' }] } }, verdict: 'deny', reason: 'AddressNotOwned' },
  { name: 'a serving request for a foreign DNS name is denied', input: parsed(SERVING, { dnsNames: ['h2'] }), verdict: 'deny', reason: 'DNSNameNotOwned' },
  { name: 'a serving request for a DNS name the Node lists only as an IP is denied', input: { ...parsed(SERVING, { dnsNames: ['weird.example'], ipAddresses: [] }), node: { ...NODE, addresses: [...NODE.addresses, { type: 'InternalIP', address: 'weird.example' }] } }, verdict: 'deny', reason: 'DNSNameNotOwned' },
  { name: 'a serving request for a wildcard is denied, even one its Node reports', input: { ...parsed(SERVING, { dnsNames: ['*.internal.example'] }), node: { ...NODE, addresses: [...NODE.addresses, { type: 'InternalDNS', address: '*.internal.example' }] } }, verdict: 'deny', reason: 'InvalidSubjectAltNames' },
  { name: 'a serving request for an e-mail address is denied', input: parsed(SERVING, { emailAddresses: ['x@y'] }), verdict: 'deny', reason: 'InvalidSubjectAltNames' },
  { name: 'a serving request for a URI is denied', input: parsed(SERVING, { uris: ['spiffe://x'] }), verdict: 'deny', reason: 'InvalidSubjectAltNames' },
  { name: 'a serving request for another kind of name is denied', input: parsed(SERVING, { otherNames: 1 }), verdict: 'deny', reason: 'InvalidSubjectAltNames' },
  { name: 'a serving request naming nothing is denied', input: parsed(SERVING, { dnsNames: [], ipAddresses: [] }), verdict: 'deny', reason: 'InvalidSubjectAltNames' },
  { name: "a serving request for another node's CN is denied", input: parsed(SERVING, { commonNames: ['system:node:h2-nodelet'] }), verdict: 'deny', reason: 'InvalidCommonName' },
  { name: 'a serving request with two CNs is denied', input: parsed(SERVING, { commonNames: ['system:node:h1-nodelet', 'system:node:h1-nodelet'] }), verdict: 'deny', reason: 'InvalidCommonName' },
  { name: 'a serving request for another group is denied', input: parsed(SERVING, { organizations: ['system:masters'] }), verdict: 'deny', reason: 'InvalidOrganization' },
  { name: 'a serving request asking for client auth is denied', input: spec(SERVING, { usages: ['digital signature', 'server auth', 'client auth'] }), verdict: 'deny', reason: 'InvalidUsages' },
  { name: 'a serving request without server auth is denied', input: spec(SERVING, { usages: ['digital signature'] }), verdict: 'deny', reason: 'InvalidUsages' },
  { name: 'a serving request whose signature does not verify is denied', input: parsed(SERVING, { signatureValid: false }), verdict: 'deny', reason: 'InvalidSignature' },
  { name: 'an unparseable serving request of a nodelet node is denied', input: { ...SERVING, parsed: new InvalidCsrError('garbage') }, verdict: 'deny', reason: 'InvalidRequest' },
  { name: 'a serving request of a nodelet node that reports no addresses yet waits (ignored, looked at again)', input: { ...SERVING, node: { ...NODE, addresses: [] } }, verdict: 'ignore', reason: 'NodeAddressesNotReported' },
  { name: "a serving request of a node without the nodelet label (a real kubelet's) is ignored", input: { ...SERVING, node: { ...NODE, hasAgentLabel: false } }, verdict: 'ignore', reason: 'NotANodeletNode' },
  { name: "an unlabeled node's request for foreign names is still ignored (not ours to judge)", input: { ...parsed(SERVING, { ipAddresses: ['10.9.9.9'] }), node: { ...NODE, hasAgentLabel: false } }, verdict: 'ignore', reason: 'NotANodeletNode' },
  { name: 'a serving request of a node that does not exist is ignored', input: { ...SERVING, node: undefined }, verdict: 'ignore', reason: 'NodeNotFound' },
  { name: "an agent service account's serving request is ignored", input: spec(SERVING, { username: AGENT, groups: SA_GROUPS }), verdict: 'ignore', reason: 'NotANodeletRequester' },
];

const OTHER_CASES: readonly Case[] = [
  { name: 'an approved request is ignored', input: { ...BOOTSTRAP, status: { conditionTypes: ['Approved'], hasCertificate: false } }, verdict: 'ignore', reason: 'AlreadyDecided' },
  { name: 'a denied request is ignored (even one this approver would approve)', input: { ...BOOTSTRAP, status: { conditionTypes: ['Denied'], hasCertificate: false } }, verdict: 'ignore', reason: 'AlreadyDecided' },
  { name: 'a failed request is ignored', input: { ...SERVING, status: { conditionTypes: ['Failed'], hasCertificate: false } }, verdict: 'ignore', reason: 'AlreadyDecided' },
  { name: 'an issued request is ignored', input: { ...RENEWAL, status: { conditionTypes: [], hasCertificate: true } }, verdict: 'ignore', reason: 'AlreadyDecided' },
  { name: "an already-decided foreign request gets no second verdict", input: { ...parsed(BOOTSTRAP, { commonNames: ['system:node:h2-nodelet'] }), status: { conditionTypes: ['Approved'], hasCertificate: false } }, verdict: 'ignore', reason: 'AlreadyDecided' },
  { name: 'an unknown signer is ignored', input: spec(BOOTSTRAP, { signerName: 'example.com/signer' }), verdict: 'ignore', reason: 'UnknownSigner' },
  { name: 'the generic API client signer is ignored', input: spec(RENEWAL, { signerName: 'kubernetes.io/kube-apiserver-client' }), verdict: 'ignore', reason: 'UnknownSigner' },
];

describe('decideCsr', () => {
  for (const [group, cases] of [['client certificates', CLIENT_CASES], ['serving certificates', SERVING_CASES], ['any request', OTHER_CASES]] as const) {
    describe(group, () => {
      for (const c of cases) {
        it(c.name, () => {
          const decision = decideCsr(c.input);
          assert.equal(decision.verdict, c.verdict, decision.message);
          assert.equal(decision.reason, c.reason, decision.message);
          assert.match(decision.message, /^\S.*\.$/, 'the message is a sentence');
        });
      }
    });
  }

  it("names the requested and the allowed node when it denies an agent another node's name", () => {
    const decision = decideCsr(parsed(BOOTSTRAP, { commonNames: ['system:node:h2-nodelet'] }));
    assert.match(decision.message, /"h2-nodelet"/);
    assert.match(decision.message, /"h1-nodelet"/);
    assert.match(decision.message, /h1/);
  });

  it("names the foreign address when it denies a node's serving request", () => {
    const decision = decideCsr(parsed(SERVING, { ipAddresses: ['10.0.0.2'] }));
    assert.match(decision.message, /10\.0\.0\.2/);
  });

  it('decides requests made and parsed for real: approves a good one, denies a tampered one', () => {
    const { csrPem } = makeCsr({ subject: { commonName: 'system:node:h1-nodelet', organizations: ['system:nodes'] }, altNames: [] });
    assert.equal(decideCsr({ ...BOOTSTRAP, parsed: parseCsrPem(csrPem) }).verdict, 'approve');
    const der = Buffer.from(csrPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
    const at = der.indexOf(Buffer.from('h1-nodelet'));
    der.writeUInt8('2'.charCodeAt(0), at + 1);
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    // The token's host is h2: only the signature rule stands between this request and approval.
    const decision = decideCsr({ ...BOOTSTRAP, parsed: parseCsrPem(tampered), spec: { ...BOOTSTRAP.spec, extra: { ...AGENT_EXTRA, [TOKEN_EXTRA.nodeName]: ['h2'] } } });
    assert.deepEqual([decision.verdict, decision.reason], ['deny', 'InvalidSignature']);
  });

  it("decides a real serving request with the Node's addresses", () => {
    const { csrPem } = makeCsr({ subject: { commonName: 'system:node:h1-nodelet', organizations: ['system:nodes'] }, altNames: ['h1', '10.0.0.1', 'fd00::1'] });
    assert.equal(decideCsr({ ...SERVING, parsed: parseCsrPem(csrPem) }).verdict, 'approve');
  });
});

describe('nodeToRead', () => {
  it("names the requester's Node only for open serving requests of nodes", () => {
    assert.equal(nodeToRead(SERVING.spec, OPEN), 'h1-nodelet');
    assert.equal(nodeToRead(SERVING.spec, { conditionTypes: ['Approved'], hasCertificate: false }), undefined);
    assert.equal(nodeToRead(RENEWAL.spec, OPEN), undefined);
    assert.equal(nodeToRead({ ...SERVING.spec, username: AGENT, groups: SA_GROUPS }, OPEN), undefined);
    assert.equal(nodeToRead({ ...SERVING.spec, groups: [] }, OPEN), undefined);
  });
});
