/**
 * A plain-HTTP stand-in for the API server's CertificateSigningRequest and Node endpoints, for the
 * CSR approver's and the node identity's tests: the approver talks to it through the real client (kube/client.ts), so
 * paths, query and bodies are what the API server would get. It keeps objects with resource
 * versions, serves list and watch, applies the approval subresource with optimistic concurrency
 * (409 Conflict for a stale resourceVersion, as the API server), records every request with the
 * status it got, and fails requests on demand. Production code never imports this file.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1CertificateSigningRequest, V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../../kube/client.js';
import { KubeTransport } from '../../kube/transport.js';

const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const NODES = '/api/v1/nodes';

/** One request the fake got. */
export interface RecordedRequest {
  readonly method: string;
  /** Without the query. */
  readonly path: string;
  readonly watch: boolean;
  readonly body: unknown;
  /** The HTTP status it was answered with (200 for a watch). */
  readonly status: number;
}

/** Which requests an injected failure hits. */
export type RequestMatcher = (request: { readonly method: string; readonly path: string; readonly watch: boolean }) => boolean;

function statusBody(code: number, reason: string): object {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message: `fake API: ${reason}` };
}

/** See this file's header. */
export class FakeCertificatesApi {
  readonly requests: RecordedRequest[] = [];
  /** Runs once per approval PUT, before it is applied: a test's concurrent change goes here. */
  beforeApproval: ((name: string) => void) | undefined;
  private readonly csrs = new Map<string, V1CertificateSigningRequest>();
  private readonly nodes = new Map<string, V1Node>();
  private readonly watchers = new Set<http.ServerResponse>();
  private readonly failures: { readonly match: RequestMatcher; readonly code: number; readonly reason: string }[] = [];
  private version = 100;
  private readonly server = http.createServer((req, res) => {
    this.handle(req, res);
  });
  private url = '';

  /** Listens on a free loopback port. */
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Ends open watches and stops listening. */
  async close(): Promise<void> {
    for (const watcher of this.watchers) watcher.end();
    this.watchers.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => { resolve(); }));
  }

  /** A client of this fake (plain HTTP, no credentials). */
  client(): KubeClient {
    return new KubeClient(new KubeTransport({ server: this.url, insecureSkipTlsVerify: false }));
  }

  /** How many watches are open. */
  openWatches(): number {
    return this.watchers.size;
  }

  /** Stores a request (a new resourceVersion) and tells the watches. */
  addCsr(csr: V1CertificateSigningRequest): V1CertificateSigningRequest {
    const stored = this.save(structuredClone(csr));
    this.emit('ADDED', stored);
    return stored;
  }

  /** Changes a stored request (a new resourceVersion); `silent` keeps it from the watches, as a change whose event is still on its way. */
  updateCsr(name: string, change: (csr: V1CertificateSigningRequest) => void, options: { readonly silent?: boolean } = {}): V1CertificateSigningRequest {
    const csr = structuredClone(this.stored(name));
    change(csr);
    const stored = this.save(csr);
    if (options.silent !== true) this.emit('MODIFIED', stored);
    return stored;
  }

  /** The stored request. */
  csr(name: string): V1CertificateSigningRequest {
    return structuredClone(this.stored(name));
  }

  /** Stores (or replaces) a Node; nodes are not watched. */
  setNode(node: V1Node): void {
    this.nodes.set(node.metadata?.name ?? '', structuredClone(node));
  }

  /** The next request `match` accepts is answered with `code` (a Status with `reason`), once. */
  failNext(match: RequestMatcher, code: number, reason = 'InternalError'): void {
    this.failures.push({ match, code, reason });
  }

  /** The PUTs to approval subresources, in order. */
  approvals(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/approval'));
  }

  private stored(name: string): V1CertificateSigningRequest {
    const csr = this.csrs.get(name);
    if (csr === undefined) throw new Error(`fake API: no CSR ${name}`);
    return csr;
  }

  private save(csr: V1CertificateSigningRequest): V1CertificateSigningRequest {
    this.version += 1;
    const stored = { ...csr, metadata: { ...csr.metadata, resourceVersion: String(this.version) } };
    this.csrs.set(stored.metadata.name ?? '', stored);
    return structuredClone(stored);
  }

  private emit(type: string, object: unknown): void {
    for (const watcher of this.watchers) watcher.write(`${JSON.stringify({ type, object })}\n`);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks).toString('utf8');
      const call = { method: req.method ?? '', path: url.pathname, watch: url.searchParams.get('watch') === 'true' };
      const body: unknown = raw === '' ? undefined : JSON.parse(raw);
      const failure = this.failures.findIndex((f) => f.match(call));
      const [code, answer] = failure === -1 ? this.answer(call, body, res) : this.takeFailure(failure);
      this.requests.push({ ...call, body, status: code });
      if (answer === 'watch') return;
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  }

  private takeFailure(index: number): [number, object] {
    const [failure] = this.failures.splice(index, 1);
    const code = failure?.code ?? 500;
    return [code, statusBody(code, failure?.reason ?? 'InternalError')];
  }

  private answer(call: { method: string; path: string; watch: boolean }, body: unknown, res: http.ServerResponse): [number, object | 'watch'] {
    const csrName = call.path.startsWith(`${CSRS}/`) ? decodeURIComponent(call.path.slice(CSRS.length + 1).replace(/\/approval$/, '')) : undefined;
    if (call.method === 'GET' && call.path === CSRS && call.watch) return [200, this.openWatch(res)];
    if (call.method === 'GET' && call.path === CSRS) {
      return [200, { kind: 'CertificateSigningRequestList', apiVersion: 'certificates.k8s.io/v1', metadata: { resourceVersion: String(this.version) }, items: [...this.csrs.values()] }];
    }
    if (call.method === 'POST' && call.path === CSRS) return [201, this.create(body as V1CertificateSigningRequest)];
    if (call.method === 'GET' && call.path.startsWith(`${NODES}/`)) {
      const node = this.nodes.get(decodeURIComponent(call.path.slice(NODES.length + 1)));
      return node === undefined ? [404, statusBody(404, 'NotFound')] : [200, node];
    }
    if (csrName === undefined || !this.csrs.has(csrName)) return [404, statusBody(404, 'NotFound')];
    if (call.method === 'GET') return [200, this.stored(csrName)];
    if (call.method === 'PUT' && call.path.endsWith('/approval')) return this.approve(csrName, body);
    return [405, statusBody(405, 'MethodNotAllowed')];
  }

  /** A new request, named from its generateName as the API server does. */
  private create(sent: V1CertificateSigningRequest): V1CertificateSigningRequest {
    const name = sent.metadata?.name ?? `${sent.metadata?.generateName ?? 'csr-'}${String(this.version + 1)}`;
    return this.addCsr({ ...sent, metadata: { ...sent.metadata, name } });
  }

  private openWatch(res: http.ServerResponse): 'watch' {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    this.watchers.add(res);
    res.on('close', () => this.watchers.delete(res));
    return 'watch';
  }

  /** The approval subresource: only the conditions change, and only from the current version. */
  private approve(name: string, body: unknown): [number, object] {
    this.beforeApproval?.(name);
    const sent = body as V1CertificateSigningRequest;
    if (sent.metadata?.resourceVersion !== this.stored(name).metadata?.resourceVersion) return [409, statusBody(409, 'Conflict')];
    const updated = this.updateCsr(name, (csr) => {
      csr.status = { ...csr.status, conditions: sent.status?.conditions ?? [] };
    });
    return [200, updated];
  }
}
