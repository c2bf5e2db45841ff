/**
 * What the nodelet CSR approver does with one CertificateSigningRequest: approve it, deny it, or
 * leave it to whoever else approves requests in the cluster ('ignore'). A pure function of the
 * request, its parsed PEM, the approver's policy and, for serving requests, the requester's Node,
 * so every rule is tested as a table (decide.test.ts) and the loop (approver.ts) only fetches facts
 * and writes the verdict.
 *
 * The rules, and why each holds:
 *
 * - Only requests still open are decided: one with an Approved, Denied or Failed condition, or a
 *   certificate, is someone's finished business, and a second condition would only add noise.
 * - Client certificates (`kubernetes.io/kube-apiserver-client-kubelet`) are what an agent
 *   authenticates as: `CN=system:node:<n>, O=system:nodes` makes the API server's Node authorizer
 *   and NodeRestriction treat it as node n. So the request must name exactly one node, exactly the
 *   group `system:nodes` (another O would be another group the certificate's holder is in), no
 *   subjectAltName (a client certificate needs none, and the signer would copy them), and only the
 *   usages of a client certificate. The signature must verify, so the requester holds the key it
 *   asks a certificate for.
 * - Who may ask for node n's client certificate: node n itself, renewing (its username is
 *   `system:node:n`, in group `system:nodes`, as its current certificate makes it); or an agent's
 *   service account, bootstrapping, for exactly `<host> + suffix`, where `<host>` is the node name
 *   the API server wrote into the request from the agent's bound pod token (`spec.extra`). The
 *   requester cannot choose that value: the API server puts the node of the pod the token is bound
 *   to there. Asking for another node's name is what a compromised agent would do, so it is denied
 *   outright, as is a malformed request from these requesters (an agent never makes one).
 * - A renewal is judged only for a nodelet node: with a suffix, a node whose name carries it. A real
 *   kubelet's renewal is the cluster's own approver's business (kubeadm grants `selfnodeclient`; a
 *   cluster that does not must not find this approver approving its kubelets behind its back).
 *   With an empty suffix every node is nodelet's (nodelet is the node agent), so every one is judged.
 * - Everyone else's client requests (bootstrap tokens `system:bootstrap:*`, other users) are left
 *   alone: the cluster's own approver (kube-controller-manager's csrapproving) or an operator
 *   decides them, and this approver must not deny what is not its business.
 * - Serving certificates (`kubernetes.io/kubelet-serving`) are what the API server checks when it
 *   connects to a node's server (logs, exec). Only a node asks for its own (`system:node:n`), only
 *   a nodelet node's (its Node carries `nodelet.dev/agent`) are this approver's to judge, and only
 *   for names its Node reports: each IP subjectAltName one of its InternalIP/ExternalIP addresses,
 *   each DNS name one of its Hostname/InternalDNS/ExternalDNS addresses or the node's name.
 *   A missing Node is 'ignore', not 'deny': without it there is no telling whether the requester
 *   is a nodelet node, and a real kubelet's request is not this approver's to refuse; the agent
 *   asks again later, by when its Node exists.
 *   Limitation: a Node's addresses are reported by the node itself, so this checks the request
 *   against what the node claims, as any kubelet-serving approver can; it stops a node from asking
 *   for names its own Node does not list, not from listing a neighbour's address there.
 * - Any other signer is not a node's business: left alone.
 */
import { canonicalIp, InvalidCsrError, type ParsedCsr } from '../kube/certificates/csr-parse.js';

/** The signer of kubelet client certificates. */
export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** The signer of kubelet serving certificates. */
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** A node's username is this plus its name. */
export const NODE_USER_PREFIX = 'system:node:';
/** The group of every node, and the one organization of a node certificate. */
export const NODES_GROUP = 'system:nodes';
/** The label every nodelet agent puts on its Node. */
export const AGENT_NODE_LABEL = 'nodelet.dev/agent';
/** The claims of a bound service-account token, as the API server records them in `spec.extra`. */
export const TOKEN_EXTRA = {
  nodeName: 'authentication.kubernetes.io/node-name',
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
} as const;

/** The reason of every approval. */
export const APPROVED_REASON = 'NodeletAutoApproved';

/** What to do with a request. */
export interface CsrDecision {
  readonly verdict: 'approve' | 'deny' | 'ignore';
  /** CamelCase, as a condition's reason (`NodeNameMismatch`). */
  readonly reason: string;
  /** A sentence for the operator reading `kubectl describe csr`. */
  readonly message: string;
  /**
   * An 'ignore' on facts that are about to change (the requester's Node not registered yet: an
   * agent asks for its serving certificate as it registers): decide it again soon, not at the
   * next resync.
   */
  readonly revisit?: true;
}

/** Whose requests this approver decides. */
export interface ApproverPolicy {
  /** Full usernames of the agents' service accounts: `system:serviceaccount:<ns>:<name>`. */
  readonly agentServiceAccounts: readonly string[];
  /** An agent on host H registers Node `H + nodeNameSuffix` (may be empty). */
  readonly nodeNameSuffix: string;
}

/** The request's `spec` fields a decision reads; the last four the API server wrote, not the requester. */
export interface CsrRequestFacts {
  readonly signerName: string;
  readonly usages: readonly string[];
  readonly username: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** Where the request stands. */
export interface CsrStatusFacts {
  /** The types of its conditions (`Approved`, `Denied`, `Failed`). */
  readonly conditionTypes: readonly string[];
  /** The signer has issued a certificate. */
  readonly hasCertificate: boolean;
}

/** One of a Node's `status.addresses`. */
export interface NodeAddress {
  /** `InternalIP`, `ExternalIP`, `Hostname`, `InternalDNS`, `ExternalDNS`. */
  readonly type: string;
  readonly address: string;
}

/** What a serving decision needs of the requester's Node. */
export interface NodeFacts {
  readonly addresses: readonly NodeAddress[];
  /** The Node carries the {@link AGENT_NODE_LABEL} label. */
  readonly hasAgentLabel: boolean;
}

/** Everything {@link decideCsr} reads. */
export interface CsrDecisionInput {
  readonly spec: CsrRequestFacts;
  readonly status: CsrStatusFacts;
  /** `spec.request` parsed, or why it could not be. */
  readonly parsed: ParsedCsr | InvalidCsrError;
  readonly policy: ApproverPolicy;
  /**
   * The Node {@link nodeToRead} named, or undefined when it does not exist (or none was named:
   * only serving requests of node users need one).
   */
  readonly node?: NodeFacts | undefined;
}

const FINISHED_CONDITIONS: ReadonlySet<string> = new Set(['Approved', 'Denied', 'Failed']);
const CLIENT_USAGES: ReadonlySet<string> = new Set(['digital signature', 'key encipherment', 'client auth']);
const SERVING_USAGES: ReadonlySet<string> = new Set(['digital signature', 'key encipherment', 'server auth']);
const IP_ADDRESS_TYPES: ReadonlySet<string> = new Set(['InternalIP', 'ExternalIP']);
const DNS_ADDRESS_TYPES: ReadonlySet<string> = new Set(['Hostname', 'InternalDNS', 'ExternalDNS']);

const approve = (message: string): CsrDecision => ({ verdict: 'approve', reason: APPROVED_REASON, message });
const deny = (reason: string, message: string): CsrDecision => ({ verdict: 'deny', reason, message });
const ignore = (reason: string, message: string): CsrDecision => ({ verdict: 'ignore', reason, message });

/** The request already has a verdict or a certificate: nothing is left to decide. */
export function isFinished(status: CsrStatusFacts): boolean {
  return status.hasCertificate || status.conditionTypes.some((type) => FINISHED_CONDITIONS.has(type));
}

/**
 * The node a username is, when it is one: `system:node:<n>` with non-empty n, in group
 * `system:nodes`. The group too because that is what makes the API server's Node authorizer treat
 * a user as a node; a user merely named so (a webhook's, a static token's) is not one.
 */
export function nodeOfUser(spec: Pick<CsrRequestFacts, 'username' | 'groups'>): string | undefined {
  if (!spec.username.startsWith(NODE_USER_PREFIX) || !spec.groups.includes(NODES_GROUP)) return undefined;
  const name = spec.username.slice(NODE_USER_PREFIX.length);
  return name === '' ? undefined : name;
}

/** The Node whose facts {@link decideCsr} needs for this request: the requester's, for an open serving request. */
export function nodeToRead(spec: CsrRequestFacts, status: CsrStatusFacts): string | undefined {
  if (isFinished(status) || spec.signerName !== SERVING_SIGNER) return undefined;
  return nodeOfUser(spec);
}

/** Approve, deny or ignore; see this file's header for the rules. */
export function decideCsr(input: CsrDecisionInput): CsrDecision {
  if (isFinished(input.status)) return ignore('AlreadyDecided', 'The request already has a verdict or a certificate.');
  switch (input.spec.signerName) {
    case CLIENT_SIGNER:
      return decideClient(input);
    case SERVING_SIGNER:
      return decideServing(input);
    default:
      return ignore('UnknownSigner', `Signer ${input.spec.signerName} is not a node signer; the nodelet CSR approver leaves the request to others.`);
  }
}

/** A check's outcome: what it found, or the denial the request earned. */
type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly decision: CsrDecision };

const fail = (reason: string, message: string): { readonly ok: false; readonly decision: CsrDecision } => ({ ok: false, decision: deny(reason, message) });

/** Parsed, and signed by the key it asks a certificate for. */
function checkSigned(parsed: ParsedCsr | InvalidCsrError): Checked<ParsedCsr> {
  if (parsed instanceof InvalidCsrError) return fail('InvalidRequest', `The request is not a valid PKCS#10 certificate request: ${parsed.message}.`);
  if (!parsed.signatureValid) return fail('InvalidSignature', `The request's signature (algorithm ${parsed.signatureAlgorithm}) does not verify with its own public key.`);
  return { ok: true, value: parsed };
}

/** Every usage allowed and the required one present; the problem as a sentence, or undefined. */
function usageProblem(usages: readonly string[], allowed: ReadonlySet<string>, required: string): string | undefined {
  const extra = usages.filter((u) => !allowed.has(u));
  if (extra.length > 0) return `The request asks for usages ${extra.join(', ')}; a node's certificate may have only ${[...allowed].join(', ')}.`;
  if (!usages.includes(required)) return `The request does not ask for the usage "${required}".`;
  return undefined;
}

/** Exactly the one organization `system:nodes`. */
function organizationProblem(parsed: ParsedCsr): string | undefined {
  const o = parsed.organizations;
  if (o.length === 1 && o[0] === NODES_GROUP) return undefined;
  return `The request's organizations are [${o.join(', ')}]; a node's certificate has exactly O=${NODES_GROUP}.`;
}

function sanCount(parsed: ParsedCsr): number {
  return parsed.dnsNames.length + parsed.ipAddresses.length + parsed.emailAddresses.length + parsed.uris.length + parsed.otherNames;
}

/** The shape of a node client certificate request; on success the node name its CN asks for. */
function checkClientShape(input: CsrDecisionInput): Checked<string> {
  const signed = checkSigned(input.parsed);
  if (!signed.ok) return signed;
  const parsed = signed.value;
  const [cn, ...moreCns] = parsed.commonNames;
  if (cn === undefined || moreCns.length > 0 || !cn.startsWith(NODE_USER_PREFIX) || cn === NODE_USER_PREFIX) {
    return fail('InvalidCommonName', `The request's common names are [${parsed.commonNames.join(', ')}]; a node client certificate has exactly one, ${NODE_USER_PREFIX}<node>.`);
  }
  const organization = organizationProblem(parsed);
  if (organization !== undefined) return fail('InvalidOrganization', organization);
  if (sanCount(parsed) > 0) return fail('SubjectAltNamesNotAllowed', 'The request asks for subject alternative names; a node client certificate has none.');
  const usage = usageProblem(input.spec.usages, CLIENT_USAGES, 'client auth');
  if (usage !== undefined) return fail('InvalidUsages', usage);
  return { ok: true, value: cn.slice(NODE_USER_PREFIX.length) };
}

function decideClient(input: CsrDecisionInput): CsrDecision {
  const { spec, policy } = input;
  const node = nodeOfUser(spec);
  if (node === undefined && !policy.agentServiceAccounts.includes(spec.username)) {
    return ignore('NotANodeletRequester', `${spec.username} is neither a nodelet agent's service account nor a node; the nodelet CSR approver leaves the request to others.`);
  }
  const checked = checkClientShape(input);
  if (!checked.ok) return checked.decision;
  const requested = checked.value;
  if (node === undefined) return decideBootstrap(spec, policy, requested);
  if (!node.endsWith(policy.nodeNameSuffix)) return ignore('NotANodeletNode', `Node "${node}" does not end in ${JSON.stringify(policy.nodeNameSuffix)}: not a nodelet node, so its client certificate is the cluster's own approver's to judge.`);
  return decideRenewal(node, requested);
}

/** A node renews only its own certificate. */
function decideRenewal(node: string, requested: string): CsrDecision {
  if (requested !== node) {
    return deny('NodeNameMismatch', `Node "${node}" asked for the client certificate of node "${requested}"; a node may only renew its own (${NODE_USER_PREFIX}${node}).`);
  }
  return approve(`Auto-approved by the nodelet CSR approver: node "${node}" renews its own client certificate.`);
}

/** The one value of a claim, or undefined when it is missing, repeated or empty. */
function singleClaim(extra: CsrRequestFacts['extra'], key: string): string | undefined {
  const values = Object.hasOwn(extra, key) ? extra[key] : undefined;
  const [value, ...more] = values ?? [];
  return value === undefined || value === '' || more.length > 0 ? undefined : value;
}

/**
 * An agent's service account asks for `<host> + suffix`, host from its token's node-name claim.
 * The token must also be bound to a pod (pod name and UID claims): a token bound directly to a
 * Node object carries a node-name claim too, and whoever may mint tokens for the agent's service
 * account could bind one to any Node; a pod-bound token's node is where that pod, running as the
 * agent's service account, was scheduled.
 */
function decideBootstrap(spec: CsrRequestFacts, policy: ApproverPolicy, requested: string): CsrDecision {
  const host = singleClaim(spec.extra, TOKEN_EXTRA.nodeName);
  if (host === undefined) {
    const count = (Object.hasOwn(spec.extra, TOKEN_EXTRA.nodeName) ? spec.extra[TOKEN_EXTRA.nodeName] : undefined)?.length ?? 0;
    return deny('NodeNameClaimMissing', `${spec.username} made the request with a token carrying ${count} ${TOKEN_EXTRA.nodeName} values; an agent bootstraps with its pod's bound token, which names exactly one node.`);
  }
  const pod = singleClaim(spec.extra, TOKEN_EXTRA.podName);
  if (pod === undefined || singleClaim(spec.extra, TOKEN_EXTRA.podUid) === undefined) {
    return deny('NotPodBoundToken', `${spec.username} made the request with a token not bound to a pod; an agent bootstraps with its pod's bound token.`);
  }
  const allowed = host + policy.nodeNameSuffix;
  if (requested !== allowed) {
    return deny('NodeNameMismatch', `${spec.username} (pod ${pod} on host "${host}") asked for the client certificate of node "${requested}"; it may only have node "${allowed}"'s.`);
  }
  return approve(`Auto-approved by the nodelet CSR approver: the agent pod ${pod} on host "${host}" bootstraps the client certificate of node "${allowed}".`);
}

function decideServing(input: CsrDecisionInput): CsrDecision {
  const node = nodeOfUser(input.spec);
  if (node === undefined) return ignore('NotANodeletRequester', `${input.spec.username} is not a node; the nodelet CSR approver leaves its serving request to others.`);
  if (input.node === undefined) return { ...ignore('NodeNotFound', `Node "${node}" does not exist (yet), so there is no telling whether it is a nodelet node; the nodelet CSR approver looks again shortly.`), revisit: true };
  if (!input.node.hasAgentLabel) return ignore('NotANodeletNode', `Node "${node}" does not carry the ${AGENT_NODE_LABEL} label; its serving certificate is not the nodelet CSR approver's to judge.`);
  // Registered, but its first status (with the addresses) not posted yet: the agent asks as it registers.
  if (input.node.addresses.length === 0) return { ...ignore('NodeAddressesNotReported', `Node "${node}" reports no addresses yet; the nodelet CSR approver looks again shortly.`), revisit: true };
  const checked = checkServingShape(input, node);
  if (!checked.ok) return checked.decision;
  const foreign = foreignNames(checked.value, node, input.node);
  if (foreign !== undefined) return foreign;
  return approve(`Auto-approved by the nodelet CSR approver: nodelet node "${node}" asks for a serving certificate for its own addresses.`);
}

/** The shape of a node serving certificate request. */
function checkServingShape(input: CsrDecisionInput, node: string): Checked<ParsedCsr> {
  const signed = checkSigned(input.parsed);
  if (!signed.ok) return signed;
  const parsed = signed.value;
  const user = `${NODE_USER_PREFIX}${node}`;
  if (parsed.commonNames.length !== 1 || parsed.commonNames[0] !== user) {
    return fail('InvalidCommonName', `The request's common names are [${parsed.commonNames.join(', ')}]; node "${node}"'s serving certificate has exactly CN=${user}.`);
  }
  const organization = organizationProblem(parsed);
  if (organization !== undefined) return fail('InvalidOrganization', organization);
  const usage = usageProblem(input.spec.usages, SERVING_USAGES, 'server auth');
  if (usage !== undefined) return fail('InvalidUsages', usage);
  if (parsed.emailAddresses.length + parsed.uris.length + parsed.otherNames > 0) {
    return fail('InvalidSubjectAltNames', 'The request asks for e-mail, URI or other subject alternative names; a node serving certificate has only DNS names and IP addresses.');
  }
  if (parsed.dnsNames.length + parsed.ipAddresses.length === 0) return fail('InvalidSubjectAltNames', 'The request names no DNS name or IP address to serve.');
  // A wildcard would cover names no Node address is; a node's own names never are one.
  if (parsed.dnsNames.some((name) => name.includes('*'))) return fail('InvalidSubjectAltNames', 'The request asks for a wildcard DNS name; a node serves only its own names.');
  return { ok: true, value: parsed };
}

/** The denial for the first kind of name the Node does not have, or undefined when it has them all. */
function foreignNames(parsed: ParsedCsr, node: string, facts: NodeFacts): CsrDecision | undefined {
  const ips = new Set(facts.addresses.filter((a) => IP_ADDRESS_TYPES.has(a.type)).flatMap((a) => canonicalIp(a.address) ?? []));
  const foreignIps = parsed.ipAddresses.filter((ip) => !ips.has(ip));
  if (foreignIps.length > 0) {
    return deny('AddressNotOwned', `Node "${node}" asked for IP addresses ${foreignIps.join(', ')}, which are not among its InternalIP/ExternalIP addresses (${[...ips].join(', ') || 'none'}).`);
  }
  // DNS names compare case-insensitively, as TLS matches them.
  const dnsNames = new Set([node, ...facts.addresses.filter((a) => DNS_ADDRESS_TYPES.has(a.type)).map((a) => a.address)].filter((n) => n !== '').map((n) => n.toLowerCase()));
  const foreignDns = parsed.dnsNames.filter((name) => !dnsNames.has(name.toLowerCase()));
  if (foreignDns.length > 0) {
    return deny('DNSNameNotOwned', `Node "${node}" asked for DNS names ${foreignDns.join(', ')}, which are neither its name nor among its Hostname/InternalDNS/ExternalDNS addresses (${[...dnsNames].join(', ')}).`);
  }
  return undefined;
}
