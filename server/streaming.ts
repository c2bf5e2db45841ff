/**
 * `/exec`, `/attach`, `/portForward` (`kubectl exec`, `attach`, `port-forward`) and `/run`, as the
 * kubelet v1.36 serves them (`server.go` getExec, getAttach, getPortForward, getRun). The kubelet
 * always proxies the runtime's streaming server, and so does nodelet: it asks the runtime for a
 * one-time URL (CRI `Exec`, `Attach`, `PortForward`) and proxies the client's upgraded connection
 * there (upgrade-proxy.ts). The API server speaks SPDY to the node (it translates kubectl's
 * WebSockets, since this node does not declare `ExtendWebSocketsToKubelet`); bytes pass through.
 *
 * Answers, in the kubelet's order: bad parameters 400 (stream-params.ts); an unknown pod 404, a
 * container without a running instance 500 (stream-target.ts); a request without `Connection:
 * Upgrade` 500 `Upgrade request required` (the kubelet's upgrade handler reports it through its
 * 500 responder, whatever the error's own code); a runtime error 404 for NotFound, 429 with
 * `Retry-After: 60` for ResourceExhausted, else 500 (`streaming.WriteError`); the runtime's own
 * refusal of the upgrade is relayed as it is.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { isCriError, isCriNotFound } from '../cri/errors.js';
import type { CallOptions, ExecSyncResult, StreamingRuntime } from '../cri/types.js';
import type { Clock } from '../util/clock.js';
import { sendText, type Route, type RouteHandler, type RouteRequest } from './routes.js';
import { isStreamParamsError, parseExecCommand, parseForwardPorts, parseRunCommand, parseStreamOptions } from './stream-params.js';
import { attachContainer, execContainer, forwardSandbox, isStreamTargetError, podByName, type PodRef, type TargetRuntime } from './stream-target.js';
import { isUpgradeProxyError, proxyUpgrade, type ProxyOptions } from './upgrade-proxy.js';

/** What the streaming routes ask of the runtime. */
export interface StreamRuntime extends TargetRuntime, StreamingRuntime {
  execSync(containerId: string, cmd: readonly string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult>;
}

/** What the streaming routes read. */
export interface StreamDeps {
  readonly pods: { list(): V1Pod[] };
  readonly runtime: StreamRuntime;
  readonly clock: Clock;
  /** Limit on connecting to the runtime's streaming server and on its upgrade answer. */
  readonly proxyTimeoutMs: number;
  /** The runtime's limit on a `/run` command (the kubelet sets none; nodelet bounds it). */
  readonly runTimeoutSeconds: number;
}

/** The request cannot go on; answered with `status` and `message`. */
class StreamRefusal extends Error {
  override readonly name = 'StreamRefusal';

  constructor(
    message: string,
    readonly status: number,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** How long the runtime's streaming cache keeps a URL (the kubelet's `Retry-After` for 429). */
const STREAM_CACHE_TTL_SECONDS = '60';

/** The kubelet's `streaming.WriteError`: the gRPC code picks the status, the message is the error's. */
function runtimeRefusal(error: unknown): StreamRefusal | undefined {
  if (!isCriError(error)) return undefined;
  if (isCriNotFound(error)) return new StreamRefusal(error.message, 404);
  if (error.code === GrpcStatus.RESOURCE_EXHAUSTED) return new StreamRefusal(error.message, 429, { 'Retry-After': STREAM_CACHE_TTL_SECONDS });
  return new StreamRefusal(error.message, 500);
}

function refusalOf(error: unknown): StreamRefusal | undefined {
  if (error instanceof StreamRefusal) return error;
  if (isStreamParamsError(error) || isStreamTargetError(error)) return new StreamRefusal(error.message, error.status);
  if (isUpgradeProxyError(error)) return new StreamRefusal(error.message, 500);
  return runtimeRefusal(error);
}

/** Runs `serve`, answering the kubelet's refusals; anything else is a server error (thrown on). */
function refusing(serve: (request: RouteRequest) => Promise<void>): RouteHandler {
  return async (request) => {
    try {
      await serve(request);
    } catch (error) {
      const refusal = refusalOf(error);
      if (refusal === undefined) throw error;
      const { res } = request;
      if (res.headersSent) {
        res.end();
        return;
      }
      for (const [name, value] of Object.entries(refusal.headers)) res.setHeader(name, value);
      sendText(res, refusal.status, refusal.message);
    }
  };
}

/** `{namespace}/{pod}[/{uid}]/{container}` from the path's parameters. */
function containerPath(params: readonly string[]): { ref: PodRef; container: string } {
  const [namespace = '', name = '', third = '', fourth] = params;
  return fourth === undefined ? { ref: { namespace, name, uid: '' }, container: third } : { ref: { namespace, name, uid: third }, container: fourth };
}

/** The socket of an upgrade request, or the kubelet's refusal of a plain one. */
function requireUpgrade(request: RouteRequest): NonNullable<RouteRequest['upgrade']> {
  if (request.upgrade === undefined) throw new StreamRefusal('Upgrade request required', 500);
  return request.upgrade;
}

async function proxyTo(request: RouteRequest, url: string, deps: StreamDeps): Promise<void> {
  const upgrade = requireUpgrade(request);
  const options: ProxyOptions = { clock: deps.clock, timeoutMs: deps.proxyTimeoutMs };
  await proxyUpgrade({ req: request.req, socket: upgrade.socket, head: upgrade.head }, url, upgrade.take, options);
}

async function exec(request: RouteRequest, deps: StreamDeps): Promise<void> {
  const streams = parseStreamOptions(request.query);
  const { ref, container } = containerPath(request.params);
  const pod = podByName(deps.pods.list(), ref);
  const containerId = await execContainer(deps.runtime, pod, ref, container);
  requireUpgrade(request);
  const url = await deps.runtime.exec(containerId, parseExecCommand(request.query), streams);
  await proxyTo(request, url, deps);
}

async function attach(request: RouteRequest, deps: StreamDeps): Promise<void> {
  const streams = parseStreamOptions(request.query);
  const { ref, container } = containerPath(request.params);
  const pod = podByName(deps.pods.list(), ref);
  const target = await attachContainer(deps.runtime, pod, ref, container);
  requireUpgrade(request);
  const url = await deps.runtime.attach(target.containerId, { ...streams, tty: target.tty });
  await proxyTo(request, url, deps);
}

function isWebSocket(request: RouteRequest): boolean {
  return (request.req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

async function portForward(request: RouteRequest, deps: StreamDeps): Promise<void> {
  const ports = parseForwardPorts(request.query, request.upgrade !== undefined && isWebSocket(request));
  const [namespace = '', name = '', uid = ''] = request.params;
  const ref = { namespace, name, uid };
  const pod = podByName(deps.pods.list(), ref);
  const sandboxId = await forwardSandbox(deps.runtime, pod, ref);
  requireUpgrade(request);
  const url = await deps.runtime.portForward(sandboxId, ports);
  await proxyTo(request, url, deps);
}

/** `/run`: the command's stdout then stderr (not interleaved: the kubelet's combined output). */
async function run(request: RouteRequest, deps: StreamDeps): Promise<void> {
  const { res } = request;
  const { ref, container } = containerPath(request.params);
  const pod = podByName(deps.pods.list(), ref);
  const containerId = await execContainer(deps.runtime, pod, ref, container);
  const cmd = parseRunCommand(request.query);
  const abort = new AbortController();
  res.once('close', () => {
    abort.abort(new Error('the client went away'));
  });
  let result: ExecSyncResult;
  try {
    result = await deps.runtime.execSync(containerId, cmd, deps.runTimeoutSeconds, { signal: abort.signal });
  } catch (error) {
    // getRun answers every failure 500 (not the streaming error writer's codes).
    if (isCriError(error)) throw new StreamRefusal(error.message, 500);
    throw error;
  }
  if (result.exitCode !== 0) throw new StreamRefusal(`command '${cmd.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString()}`, 500);
  const output = Buffer.concat([result.stdout, result.stderr]);
  if (output.length === 0) {
    res.writeHead(200, { 'Content-Length': 0 });
    res.end();
    return;
  }
  // The kubelet labels the raw output JSON (go-restful's writeJSON), whatever it holds.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': output.length });
  res.end(output);
}

/** The streaming routes, for the route table (handlers.ts). */
export function streamingRoutes(deps: StreamDeps): Route[] {
  const routes: Route[] = [];
  const add = (methods: readonly string[], patterns: readonly string[], serve: (request: RouteRequest, deps: StreamDeps) => Promise<void>): void => {
    const handler = refusing((request) => serve(request, deps));
    for (const method of methods) for (const pattern of patterns) routes.push({ method, pattern, handler });
  };
  add(['GET', 'POST'], ['/exec/{}/{}/{}', '/exec/{}/{}/{}/{}'], exec);
  add(['GET', 'POST'], ['/attach/{}/{}/{}', '/attach/{}/{}/{}/{}'], attach);
  add(['GET', 'POST'], ['/portForward/{}/{}', '/portForward/{}/{}/{}'], portForward);
  add(['POST'], ['/run/{}/{}/{}', '/run/{}/{}/{}/{}'], run);
  return routes;
}
