/**
 * The real node server on loopback over TLS, for component tests: certificates made in memory, a
 * client certificate of the client CA (the API server's identity, `system:masters`), reviews
 * answered by a predicate (fake-access-review.ts), and a plain HTTPS GET that collects the answer.
 */
import { request } from 'node:https';
import { pino } from 'pino';
import { Authenticator } from '../../server/authn.js';
import { NodeAuthorizer } from '../../server/authz.js';
import { createNodeServer, type NodeServer } from '../../server/node-server.js';
import type { Route } from '../../server/routes.js';
import { makeCertificate, type CertificateAndKey } from '../../kube/certificates/x509.js';
import { systemClock } from '../../util/clock.js';
import { FakeAccessReviewer, FakeTokenReviewer } from './fake-access-review.js';

const now = new Date();
const later = new Date(Date.now() + 3600_000);
const clientCa = makeCertificate({ subject: { commonName: 'client-ca' }, isCa: true, notBefore: now, notAfter: later });

/** The server's certificate: a client trusts it as its CA. */
export const SERVING = makeCertificate({ subject: { commonName: 'node-1' }, altNames: ['127.0.0.1'], usages: ['serverAuth'], isCa: true, notBefore: now, notAfter: later });

/** A client certificate of the client CA, as the API server's `kube-apiserver-kubelet-client`. */
export const API_SERVER_CLIENT: CertificateAndKey = makeCertificate({
  subject: { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] },
  usages: ['clientAuth'],
  notBefore: now,
  notAfter: later,
  issuer: clientCa,
});

/** A started server and what it asked the fake API server. */
export interface TestServer {
  readonly port: number;
  readonly server: NodeServer;
  readonly access: FakeAccessReviewer;
}

/** Starts a node server on 127.0.0.1 (a free port) serving `routes`; every review allows. */
export async function startTestServer(routes: readonly Route[]): Promise<TestServer> {
  const access = new FakeAccessReviewer(() => true);
  const server = createNodeServer({
    address: '127.0.0.1',
    port: 0,
    certPem: SERVING.certPem,
    keyPem: SERVING.keyPem,
    clientCaPem: clientCa.certPem,
    authenticator: new Authenticator(new FakeTokenReviewer(new Map()), systemClock),
    authorizer: new NodeAuthorizer(access, 'node-1', systemClock),
    routes,
    logger: pino({ level: 'silent' }),
  });
  return { port: await server.start(), server, access };
}

/** An answer: status, headers and body. */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/** GET (or `method`) `urlPath` as the API server's client certificate; the raw path is sent as is, with `headers`. */
export function getAs(port: number, urlPath: string, method = 'GET', headers: Readonly<Record<string, string>> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: urlPath, method, headers, ca: SERVING.certPem, cert: API_SERVER_CLIENT.certPem, key: API_SERVER_CLIENT.keyPem, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
