/**
 * A loopback HTTP front of the test cluster's API server for the node e2e suite (`e2e_node.test`),
 * which talks to `--host` with `--bearer-token` and assumes a one-node cluster (one-node-view.ts
 * says why and what changes). run-node.sh starts it for one run and kills it after:
 *
 *   one-node-proxy.ts --kubeconfig <file> --node <name> [--hide-taint <key>]...
 *
 * Prints `http://127.0.0.1:<port>` on stdout once it listens. Every request goes to the kubeconfig's
 * current server with the kubeconfig's credentials (the suite's own token is dropped), streamed both
 * ways, upgrades (exec, attach, port-forward: SPDY or WebSocket) included. Only GETs of nodes are
 * read and rewritten, asked for as JSON: lists and watch streams keep the node under test alone.
 * Loopback only: it is a cluster-admin door for whoever can reach it.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { classifyNodeRequest, viewOfNodeResponse, viewOfNodeWatchEvent, type NodeRequest, type OneNodeView } from './one-node-view.js';

/** What the proxy needs of a kubeconfig's current context. */
interface Upstream {
  readonly url: URL;
  readonly agent: https.Agent;
  readonly authorization?: string;
}

interface KubeconfigNamed<T> {
  readonly name: string;
  readonly cluster?: T;
  readonly user?: T;
  readonly context?: T;
}

interface Kubeconfig {
  readonly 'current-context'?: string;
  readonly contexts?: readonly KubeconfigNamed<{ readonly cluster: string; readonly user: string }>[];
  readonly clusters?: readonly KubeconfigNamed<Record<string, string | undefined>>[];
  readonly users?: readonly KubeconfigNamed<Record<string, string | undefined>>[];
}

/** Thrown for a kubeconfig this proxy cannot use. */
export class BadKubeconfigError extends Error {
  override readonly name = 'BadKubeconfigError';
}

/** `<field>-data` (base64) or `<field>` (a file, relative to the kubeconfig). */
function pemOf(entry: Record<string, string | undefined>, field: string, dir: string): Buffer | undefined {
  const data = entry[`${field}-data`];
  if (data !== undefined) return Buffer.from(data, 'base64');
  const file = entry[field];
  return file === undefined ? undefined : readFileSync(path.resolve(dir, file));
}

function upstreamOf(kubeconfigPath: string): Upstream {
  const config = loadYaml(readFileSync(kubeconfigPath, 'utf8')) as Kubeconfig;
  const dir = path.dirname(kubeconfigPath);
  const context = config.contexts?.find((c) => c.name === config['current-context'])?.context;
  const cluster = config.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = config.users?.find((u) => u.name === context?.user)?.user ?? {};
  if (context === undefined || cluster?.server === undefined) throw new BadKubeconfigError(`${kubeconfigPath}: no current context with a cluster server`);
  const url = new URL(cluster.server);
  const agent = new https.Agent({
    keepAlive: true,
    ca: pemOf(cluster, 'certificate-authority', dir),
    cert: pemOf(user, 'client-certificate', dir),
    key: pemOf(user, 'client-key', dir),
  });
  const token = user.token ?? (user.tokenFile === undefined ? undefined : readFileSync(path.resolve(dir, user.tokenFile), 'utf8').trim());
  return { url, agent, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) };
}

/** Hop-by-hop headers (RFC 9110 7.6.1) and the ones this proxy sets itself. */
const DROPPED = new Set(['host', 'authorization', 'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function upstreamHeaders(req: http.IncomingMessage, upstream: Upstream, options: { upgrade: boolean; json: boolean }): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!DROPPED.has(name) && value !== undefined) headers[name] = value;
  headers.host = upstream.url.host;
  if (upstream.authorization !== undefined) headers.authorization = upstream.authorization;
  if (options.upgrade) {
    headers.connection = 'Upgrade';
    if (req.headers.upgrade !== undefined) headers.upgrade = req.headers.upgrade;
  }
  if (options.json) {
    headers.accept = 'application/json';
    delete headers['accept-encoding'];
  }
  return headers;
}

function responseHeaders(res: http.IncomingMessage): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(res.headers)) if (!DROPPED.has(name) && value !== undefined) headers[name] = value;
  return headers;
}

function requestUpstream(upstream: Upstream, req: http.IncomingMessage, headers: http.OutgoingHttpHeaders): http.ClientRequest {
  return https.request({
    protocol: 'https:',
    hostname: upstream.url.hostname,
    port: upstream.url.port === '' ? 443 : Number(upstream.url.port),
    method: req.method,
    path: req.url,
    headers,
    agent: upstream.agent,
  });
}

function isJson(res: http.IncomingMessage): boolean {
  return (res.headers['content-type'] ?? '').startsWith('application/json');
}

/** A node list or one node: the whole answer, rewritten. */
function sendViewed(res: http.ServerResponse, upRes: http.IncomingMessage, view: OneNodeView): void {
  const chunks: Buffer[] = [];
  upRes.on('data', (c: Buffer) => chunks.push(c));
  upRes.on('end', () => {
    let body = Buffer.concat(chunks);
    if (upRes.statusCode === 200 && isJson(upRes)) body = Buffer.from(JSON.stringify(viewOfNodeResponse(JSON.parse(body.toString('utf8')), view)));
    const headers = responseHeaders(upRes);
    headers['content-length'] = body.length;
    res.writeHead(upRes.statusCode ?? 502, headers);
    res.end(body);
  });
}

/** A node watch: newline-delimited JSON events, each rewritten or dropped as it arrives. */
function streamViewed(res: http.ServerResponse, upRes: http.IncomingMessage, view: OneNodeView): void {
  const headers = responseHeaders(upRes);
  delete headers['content-length'];
  res.writeHead(upRes.statusCode ?? 502, headers);
  if (upRes.statusCode !== 200 || !isJson(upRes)) {
    upRes.pipe(res);
    return;
  }
  let pending = '';
  upRes.setEncoding('utf8');
  upRes.on('data', (text: string) => {
    pending += text;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line === '') continue;
      const event = viewOfNodeWatchEvent(JSON.parse(line), view);
      if (event !== undefined) res.write(`${JSON.stringify(event)}\n`);
    }
  });
  upRes.on('end', () => res.end());
}

function handle(upstream: Upstream, view: OneNodeView, req: http.IncomingMessage, res: http.ServerResponse): void {
  const nodes: NodeRequest = req.method === 'GET' ? classifyNodeRequest(req.url ?? '/') : { kind: 'other' };
  const up = requestUpstream(upstream, req, upstreamHeaders(req, upstream, { upgrade: false, json: nodes.kind !== 'other' }));
  up.on('response', (upRes) => {
    if (nodes.kind === 'collection' && nodes.watch) streamViewed(res, upRes, view);
    else if (nodes.kind !== 'other') sendViewed(res, upRes, view);
    else {
      res.writeHead(upRes.statusCode ?? 502, responseHeaders(upRes));
      upRes.pipe(res);
    }
  });
  up.on('error', (err) => {
    process.stderr.write(`[one-node-proxy] ${req.method ?? '?'} ${req.url ?? '?'}: ${err.message}\n`);
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`one-node-proxy: ${err.message}\n`);
  });
  res.on('close', () => up.destroy());
  req.pipe(up);
}

function statusLine(res: http.IncomingMessage): string {
  const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i] ?? ''}: ${res.rawHeaders[i + 1] ?? ''}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** exec, attach, port-forward: the upstream's 101 goes back as it came, then bytes both ways. */
function handleUpgrade(upstream: Upstream, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
  const up = requestUpstream(upstream, req, upstreamHeaders(req, upstream, { upgrade: true, json: false }));
  const fail = (err: Error): void => {
    process.stderr.write(`[one-node-proxy] upgrade ${req.url ?? '?'}: ${err.message}\n`);
    socket.destroy();
  };
  up.on('upgrade', (upRes, upSocket, upHead) => {
    socket.write(statusLine(upRes));
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    upSocket.pipe(socket).pipe(upSocket);
    upSocket.on('error', () => socket.destroy());
    socket.on('error', () => upSocket.destroy());
    upSocket.on('close', () => socket.destroy());
    socket.on('close', () => upSocket.destroy());
  });
  up.on('response', (upRes) => {
    // Refused (no 101): the answer as it is, then the connection closes.
    const chunks: Buffer[] = [];
    upRes.on('data', (c: Buffer) => chunks.push(c));
    upRes.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.entries(responseHeaders(upRes)).filter(([n]) => n !== 'content-length');
      const lines = [`HTTP/1.1 ${upRes.statusCode ?? 502} ${upRes.statusMessage ?? ''}`, ...headers.map(([n, v]) => `${n}: ${String(v)}`), `content-length: ${body.length}`, 'connection: close'];
      socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
    });
  });
  up.on('error', fail);
  socket.on('error', () => up.destroy());
  up.end();
}

function options(args: readonly string[]): { kubeconfig: string; view: OneNodeView } {
  let kubeconfig: string | undefined;
  let node: string | undefined;
  const hidden = new Set<string>();
  for (let i = 0; i < args.length; i += 2) {
    const value = args[i + 1];
    if (value === undefined) throw new Error(`${args[i] ?? ''} needs a value`);
    if (args[i] === '--kubeconfig') kubeconfig = value;
    else if (args[i] === '--node') node = value;
    else if (args[i] === '--hide-taint') hidden.add(value);
    else throw new Error(`unknown option ${args[i] ?? ''}`);
  }
  if (kubeconfig === undefined || node === undefined) throw new Error('usage: one-node-proxy.ts --kubeconfig <file> --node <name> [--hide-taint <key>]...');
  return { kubeconfig, view: { node, hiddenTaints: hidden } };
}

function main(): void {
  const { kubeconfig, view } = options(process.argv.slice(2));
  const upstream = upstreamOf(kubeconfig);
  const server = http.createServer((req, res) => { handle(upstream, view, req, res); });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => { handleUpgrade(upstream, req, socket, head); });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    process.stdout.write(`http://127.0.0.1:${address.port}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

main();
