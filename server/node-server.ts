/**
 * The node server (the kubelet's port 10250): HTTPS only, on the node's InternalIP. Every request
 * is authenticated (client certificate, else bearer token: authn.ts) and authorized (a
 * SubjectAccessReview per `nodes/<subresource>`: authz.ts) before it is routed (handlers.ts),
 * with the kubelet's answers: 401 `Unauthorized`, 403 `Forbidden (user=…)`, 500 `Authorization
 * error (…)` when the API server cannot answer, 404 for an unknown path.
 *
 * HTTP upgrade requests (exec, attach, port-forward) go through the same steps: Node hands them
 * over with their raw socket, on which a `ServerResponse` is opened so that every refusal is an
 * ordinary answer (and the connection closed after it); a route that proxies takes the socket
 * over. Upgraded connections are the server's to end on `stop()`: Node no longer tracks them.
 */
import { createServer, type Server } from 'node:https';
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { PeerCertificate as TlsPeerCertificate, TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { Authenticator, UserInfo } from './authn.js';
import { requestAttributes, type NodeAuthorizer } from './authz.js';
import { isBadPathError, matchRoute, sendText, type Route, type RouteMatch, type UpgradeSocket } from './routes.js';
import type { NodeHttpMetrics } from './http-metrics.js';

/** How the server is built. */
export interface NodeServerOptions {
  /** The node's InternalIP: the only address served. */
  readonly address: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /**
   * The serving pair; absent (a requested certificate not issued yet), every handshake fails until
   * {@link NodeServer.setCredentials} gives one, as the kubelet's server has no certificate to offer.
   */
  readonly certPem?: string;
  readonly keyPem?: string;
  /** CA bundle that client certificates must chain to; absent: only bearer tokens authenticate. */
  readonly clientCaPem?: string;
  readonly authenticator: Authenticator;
  readonly authorizer: NodeAuthorizer;
  readonly routes: readonly Route[];
  readonly logger: Logger;
  /** Counts every request (`kubelet_http_*`); absent: not counted. */
  readonly metrics?: NodeHttpMetrics;
}

/** The running server. */
export interface NodeServer {
  /** Listens; resolves with the port bound. */
  start(): Promise<number>;
  /** Stops listening and ends every open request (followers included). */
  stop(): Promise<void>;
  /** Serves a new certificate from the next handshake on; open connections keep theirs. */
  setCredentials(certPem: string, keyPem: string): void;
}

function peerOf(req: IncomingMessage): { peerCertificate?: TlsPeerCertificate; peerVerified: boolean } {
  const socket = req.socket as TLSSocket;
  const cert = socket.getPeerCertificate();
  return Object.keys(cert).length === 0 ? { peerVerified: false } : { peerCertificate: cert, peerVerified: socket.authorized };
}

async function authenticate(req: IncomingMessage, options: NodeServerOptions): Promise<UserInfo | undefined> {
  try {
    return await options.authenticator.authenticate({ ...peerOf(req), ...(req.headers.authorization === undefined ? {} : { authorizationHeader: req.headers.authorization }) });
  } catch (error) {
    options.logger.warn({ err: error }, 'unable to authenticate the request due to an error');
    return undefined;
  }
}

async function serve(req: IncomingMessage, res: ServerResponse, options: NodeServerOptions, upgrade?: UpgradeSocket): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://node.invalid');
  const method = req.method ?? 'GET';
  const user = await authenticate(req, options);
  if (user === undefined) {
    sendText(res, 401, 'Unauthorized');
    return;
  }
  try {
    const decision = await options.authorizer.authorize(user, method, url.pathname);
    if (!decision.allowed) {
      options.logger.debug({ user: user.name, path: url.pathname }, decision.message);
      sendText(res, 403, decision.message);
      return;
    }
  } catch (error) {
    const { verb, subresources } = requestAttributes(method, url.pathname);
    const message = `Authorization error (user=${user.name}, verb=${verb}, resource=nodes, subresource=${subresources[0] ?? ''})`;
    options.logger.warn({ err: error }, message);
    sendText(res, 500, message);
    return;
  }
  const match = routeOf(options.routes, method, url.pathname);
  if (match === undefined) {
    sendText(res, 400, '400 Bad Request');
    return;
  }
  if (match.kind === 'not-found') sendText(res, 404, '404 page not found');
  else if (match.kind === 'method-not-allowed') {
    if (match.allow !== undefined) res.setHeader('Allow', match.allow);
    sendText(res, 405, 'Method Not Allowed');
  }
  else await match.handler({ req, res, params: match.params, query: url.searchParams, ...(upgrade === undefined ? {} : { upgrade }) });
}

/** The route, or undefined for a path that is not valid percent-encoding (a 400). */
function routeOf(routes: readonly Route[], method: string, path: string): RouteMatch | undefined {
  try {
    return matchRoute(routes, method, path);
  } catch (error) {
    if (isBadPathError(error)) return undefined;
    throw error;
  }
}

/** The request's path without its query; a target that is no URL counts as the root. */
function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

/** A response written to an upgrade request's raw socket; the connection closes after it. */
function responseOn(req: IncomingMessage, socket: Duplex): { res: ServerResponse; take: () => void } {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  // Node gives the upgrade's socket as a Duplex; it is the connection's (TLS) socket.
  res.assignSocket(socket as Socket);
  const closeAfter = (): void => {
    socket.end();
  };
  res.once('finish', closeAfter);
  const take = (): void => {
    res.off('finish', closeAfter);
    res.detachSocket(socket as Socket);
  };
  return { res, take };
}

function failed(res: ServerResponse, req: IncomingMessage, options: NodeServerOptions): (error: unknown) => void {
  return (error) => {
    options.logger.error({ err: error, url: req.url }, 'node server request failed');
    sendText(res, 500, 'Internal Server Error');
  };
}

/** Builds the server; see this file's header. */
export function createNodeServer(options: NodeServerOptions): NodeServer {
  const clientCa = options.clientCaPem;
  const tlsOptions = {
    minVersion: 'TLSv1.2',
    // Ask for a certificate but let the request through without one (a bearer token may follow);
    // `socket.authorized` says whether the chain verified.
    ...(clientCa === undefined ? {} : { ca: clientCa, requestCert: true, rejectUnauthorized: false }),
  } as const;
  const server: Server = createServer({ ...tlsOptions, ...(options.certPem === undefined ? {} : { cert: options.certPem }), ...(options.keyPem === undefined ? {} : { key: options.keyPem }) });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // Ends with the response, as the kubelet's ends when its handler returns (a log follow included).
    const ended = options.metrics?.requestStarted(req.method ?? '', pathOf(req));
    if (ended !== undefined) res.once('close', ended);
    serve(req, res, options).catch(failed(res, req, options));
  });
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // An exec, attach or port-forward is in flight until its connection closes.
    const ended = options.metrics?.requestStarted(req.method ?? '', pathOf(req));
    if (ended !== undefined) socket.once('close', ended);
    // Node stops watching this socket: an error must still end it, never go unhandled.
    socket.on('error', () => {
      socket.destroy();
    });
    const { res, take } = responseOn(req, socket);
    serve(req, res, options, { socket, head, take }).catch(failed(res, req, options));
  });
  return {
    start: () =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.address, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
        // closeAllConnections does not reach upgraded sockets, and close() waits for them.
        for (const socket of upgraded) socket.destroy();
      }),
    setCredentials: (certPem, keyPem) => {
      server.setSecureContext({ ...tlsOptions, cert: certPem, key: keyPem });
    },
  };
}
