/**
 * The node's own API credentials, as the kubelet's `--bootstrap-kubeconfig`, `--cert-dir` and
 * `--rotate-certificates`: the agent starts from a bootstrap credential that can do nothing but ask
 * for a client certificate (a bootstrap token, or the bound token of the agent's pod), requests
 * one for `CN=system:node:<node>, O=system:nodes` from signer
 * `kubernetes.io/kube-apiserver-client-kubelet`, keeps it as `<cert-dir>/nodelet-client-current.pem`
 * and does all its API work with it, so the Node authorizer and NodeRestriction confine it to its
 * own Node, Lease and pods and what those pods reference.
 *
 * Renewals are asked for with the current certificate while it is valid (the request then names
 * the node itself, which an approver checks against the subject), and with the bootstrap
 * credential again only once it has expired, as client-go's certificate manager does. The one
 * transport of the agent reads the pair file by its modification time, so a rotation reaches every
 * later request without a restart (kube/transport.ts).
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { dump as dumpYaml } from 'js-yaml';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { CertificateManager, pairFitsTemplate, type CertificateTemplate, type CsrClient } from './certificates/certificate-manager.js';
import { apiCsrClient } from './certificates/csr-client.js';
import { KubeClient } from './client.js';
import type { KubeEndpoint, Material } from './kubeconfig.js';
import { KubeTransport, type KubeRequestMetrics } from './transport.js';

export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** An ECDSA key signs but does not encipher: the kubelet asks for key encipherment only with RSA. */
export const CLIENT_USAGES: readonly string[] = ['digital signature', 'client auth'];
/** The kubelet's is `kubelet-client-current.pem`; a different name, so the two never share a directory by accident. */
export const CLIENT_PAIR_FILE = 'nodelet-client-current.pem';

/** What the node's credentials are made from. */
export interface NodeIdentityOptions {
  readonly nodeName: string;
  /** The credential that asks for the first certificate (and for a new one once it expired). */
  readonly bootstrap: KubeEndpoint;
  /** Where the pair is kept (`--cert-dir`). */
  readonly certDir: string;
  /** Keep renewing before expiry (`--rotate-certificates`); otherwise the first certificate is kept until it expires. */
  readonly rotate: boolean;
  /** Also write a kubeconfig using the pair here (the kubelet writes `--kubeconfig`), for tools on the host. */
  readonly kubeconfigOut?: string;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: Logger;
  /** How often a pending request is looked at. */
  readonly pollMs?: number;
  /** Hears the certificate requests' API calls (the kubelet's bootstrap client counts in `rest_client_*` too). */
  readonly metrics?: KubeRequestMetrics;
}

/** The node's credentials, established. */
export interface NodeIdentity {
  /** The API server with the node's client certificate (a file the rotation replaces). */
  readonly endpoint: KubeEndpoint;
  /** Stops the rotation; the endpoint keeps working until the certificate expires. */
  stop(): void;
}

/** The node's client certificate template. */
export function nodeClientTemplate(nodeName: string): CertificateTemplate {
  return {
    label: 'client certificate',
    signerName: CLIENT_SIGNER,
    usages: CLIENT_USAGES,
    subject: { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
    altNames: [],
    fileName: CLIENT_PAIR_FILE,
  };
}

/** The bootstrap endpoint's server and trust, with the pair file as the client credential. */
export function nodeEndpoint(bootstrap: KubeEndpoint, pairFile: string): KubeEndpoint {
  const pair: Material = { file: pairFile };
  return {
    server: bootstrap.server,
    insecureSkipTlsVerify: bootstrap.insecureSkipTlsVerify,
    ...(bootstrap.ca === undefined ? {} : { ca: bootstrap.ca }),
    ...(bootstrap.tlsServerName === undefined ? {} : { tlsServerName: bootstrap.tlsServerName }),
    clientCert: pair,
    clientKey: pair,
  };
}

/**
 * Requests go out with the node's certificate while it is valid, else with the bootstrap
 * credential; a request is read back with the credential that made it.
 */
export function renewingCsrClient(options: { readonly nodeClient: CsrClient; readonly bootstrapClient: CsrClient; readonly nodeCertValid: () => boolean }): CsrClient {
  const madeWith = new Map<string, CsrClient>();
  return {
    async create(request) {
      const client = options.nodeCertValid() ? options.nodeClient : options.bootstrapClient;
      const name = await client.create(request);
      madeWith.set(name, client);
      return name;
    },
    get(name) {
      return (madeWith.get(name) ?? options.bootstrapClient).get(name);
    },
  };
}

/** A kubeconfig naming the pair file for certificate and key, as the kubelet writes one. */
export async function writeNodeKubeconfig(file: string, endpoint: KubeEndpoint, pairFile: string): Promise<void> {
  const ca = endpoint.ca;
  const cluster = {
    server: endpoint.server,
    ...(ca === undefined ? {} : 'data' in ca ? { 'certificate-authority-data': ca.data.toString('base64') } : { 'certificate-authority': ca.file }),
    ...(endpoint.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
    ...(endpoint.tlsServerName === undefined ? {} : { 'tls-server-name': endpoint.tlsServerName }),
  };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster }],
    users: [{ name: 'default-auth', user: { 'client-certificate': pairFile, 'client-key': pairFile } }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth' } }],
    'current-context': 'default-context',
  };
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, dumpYaml(config), { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/**
 * Establishes the node's credentials: reuses a stored certificate that still fits, or requests one
 * with the bootstrap credential and waits until it is approved and issued (as the kubelet waits
 * before it registers). Resolves with the endpoint every API client of the agent uses.
 */
export async function establishNodeIdentity(options: NodeIdentityOptions): Promise<NodeIdentity> {
  const { nodeName, clock, logger } = options;
  const template = nodeClientTemplate(nodeName);
  const pairFile = path.join(options.certDir, CLIENT_PAIR_FILE);
  const endpoint = nodeEndpoint(options.bootstrap, pairFile);
  const limits = options.metrics === undefined ? {} : { metrics: options.metrics };
  const bootstrapKube = new KubeClient(new KubeTransport(options.bootstrap, clock, limits));
  const nodeKube = new KubeClient(new KubeTransport(endpoint, clock, limits));
  const namePrefix = `nodelet-client-${nodeName}-`;
  const manager: CertificateManager = new CertificateManager({
    template,
    dir: options.certDir,
    client: renewingCsrClient({
      nodeClient: apiCsrClient(nodeKube, namePrefix),
      bootstrapClient: apiCsrClient(bootstrapKube, namePrefix),
      nodeCertValid: () => {
        const pair = manager.current();
        return pair !== undefined && pairFitsTemplate(pair, template, clock.now());
      },
    }),
    clock,
    random: options.random,
    logger: logger.child({ component: 'node-identity' }),
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
  });
  await manager.start();
  const first = manager.current() === undefined;
  if (first) logger.info({ signer: CLIENT_SIGNER, user: template.subject.commonName }, 'node credentials: requesting a client certificate with the bootstrap credential');
  // Nothing else runs yet, and the clock's timers never hold the process open (util/clock.ts): a
  // process waiting only for an approval would exit. A referenced no-op interval holds it until then.
  const holdOpen = setInterval(() => undefined, 60_000);
  try {
    await manager.firstPair();
  } finally {
    clearInterval(holdOpen);
  }
  if (!options.rotate) manager.stop();
  if (options.kubeconfigOut !== undefined) await writeNodeKubeconfig(options.kubeconfigOut, options.bootstrap, pairFile);
  // The bootstrap credential is needed again only after an expiry; its sockets need not stay open.
  bootstrapKube.close();
  return {
    endpoint,
    stop: () => {
      manager.stop();
      nodeKube.close();
      bootstrapKube.close();
    },
  };
}
