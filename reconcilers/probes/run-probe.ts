/**
 * Runs one probe once, as the kubelet's probers do, and says what happened:
 *
 * - exec: the command runs in the container through the runtime's `ExecSync`, bounded by the
 *   probe's timeout; exit code 0 is success, anything else failure; the output is kept.
 * - httpGet: a GET to `scheme://host:port/path` (host defaults to the pod IP) with the probe's
 *   headers plus `User-Agent: kube-probe/<version>` and `Accept: *\/*` unless given; a status in
 *   [200, 400) is success; HTTPS does not verify the certificate (as the kubelet). Redirects are
 *   followed to the same host only; a redirect not followed is a success with a warning.
 * - tcpSocket: a connection that opens within the timeout is success.
 * - grpc: the standard health service's `Check` (grpc.health.v1) for the probe's service name;
 *   `SERVING` is success.
 *
 * Output and failure messages are cut to 10 KiB, the kubelet's limit. A named port is looked up in
 * the container's ports. A probe that cannot run (a port name the container does not declare) is
 * `unknown` with the reason as output.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { V1Container } from '@kubernetes/client-node';
import type { RuntimeService } from '../../cri/types.js';
import { errorMessage } from '../model/sync-errors.js';
import { grpcHealthCheck } from './grpc-health.js';
import type { ProbeAction, ProbeSettings } from './probe-spec.js';
import { timerMs } from '../../util/clock.js';
import type { ProbeOutcome } from './probe-outcome.js';
import { FOLLOWED_KUBERNETES_MINOR } from '../../util/kubernetes-release.js';

/** `kube-probe/<major>.<minor>`, as the kubelet of the version nodelet follows sends. */
export const PROBE_USER_AGENT = `kube-probe/${FOLLOWED_KUBERNETES_MINOR}`;

/** The kubelet's cap on probe output kept for events and logs. */
export const MAX_PROBE_OUTPUT_BYTES = 10 * 1024;

/** What a probe runs against. */
export interface ProbeTarget {
  readonly containerId: string;
  readonly container: V1Container;
  /** The pod's primary IP; empty for a host-network pod (then the node IP is used). */
  readonly podIp: string;
}

export interface ProbeRunnerDeps {
  readonly runtime: RuntimeService;
}

export function truncateOutput(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= MAX_PROBE_OUTPUT_BYTES ? text : bytes.subarray(0, MAX_PROBE_OUTPUT_BYTES).toString('utf8');
}

/** A port number from the probe, or the container port of that name. */
export function resolvePort(port: number | string, container: V1Container): number | undefined {
  if (typeof port === 'number') return port > 0 && port < 65536 ? port : undefined;
  const named = container.ports?.find((p) => p.name === port)?.containerPort;
  if (named !== undefined) return named;
  const numeric = Number.parseInt(port, 10);
  return String(numeric) === port && numeric > 0 && numeric < 65536 ? numeric : undefined;
}

/** Runs the probe once. Never throws: every failure is a result. */
export async function runProbe(deps: ProbeRunnerDeps, settings: ProbeSettings, target: ProbeTarget): Promise<ProbeOutcome> {
  try {
    const outcome = await runAction(deps, settings, target);
    const warning = outcome.warning === undefined ? {} : { warning: truncateOutput(outcome.warning) };
    return { result: outcome.result, output: truncateOutput(outcome.output), ...warning };
  } catch (error) {
    return { result: 'failure', output: truncateOutput(errorMessage(error)) };
  }
}

function runAction(deps: ProbeRunnerDeps, settings: ProbeSettings, target: ProbeTarget): Promise<ProbeOutcome> {
  const action: ProbeAction = settings.action;
  switch (action.kind) {
    case 'exec':
      return runExec(deps, action.command, settings.timeoutMs, target);
    case 'httpGet':
      return withPort(action.port, target, (port) => runHttp({ ...action, port, host: action.host || target.podIp }, settings.timeoutMs));
    case 'tcpSocket':
      return withPort(action.port, target, (port) => runTcp(action.host || target.podIp, port, settings.timeoutMs));
    case 'grpc':
      return grpcHealthCheck({ host: target.podIp, port: action.port, service: action.service, timeoutMs: settings.timeoutMs });
  }
}

async function withPort(port: number | string, target: ProbeTarget, run: (port: number) => Promise<ProbeOutcome>): Promise<ProbeOutcome> {
  const resolved = resolvePort(port, target.container);
  if (resolved === undefined) return { result: 'unknown', output: `port ${String(port)} is not a port of container ${target.container.name}` };
  return run(resolved);
}

async function runExec(deps: ProbeRunnerDeps, command: readonly string[], timeoutMs: number, target: ProbeTarget): Promise<ProbeOutcome> {
  const result = await deps.runtime.execSync(target.containerId, command, Math.max(1, Math.ceil(timeoutMs / 1000)));
  const output = Buffer.concat([result.stdout, result.stderr]).toString('utf8');
  if (result.exitCode === 0) return { result: 'success', output };
  return { result: 'failure', output: output === '' ? `command ${JSON.stringify(command)} exited with ${result.exitCode}` : output };
}

function hostForUrl(host: string): string {
  return net.isIPv6(host) ? `[${host}]` : host;
}

interface HttpTarget {
  readonly scheme: 'HTTP' | 'HTTPS';
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly headers: readonly { name: string; value: string }[];
}

/** One GET's answer: status, Location and the body's first 10 KiB. */
interface HttpAnswer {
  readonly code: number;
  readonly location: string | undefined;
  readonly body: string;
}

/** The redirects Go's client follows (others are answers), and its limit of 10. */
const FOLLOWED_REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 10;

/**
 * The kubelet's HTTP probe: redirects are followed only to the same host name (at most 10); any
 * other redirect, or a 3xx that is not followed, is a success with a warning ("Probe terminated
 * redirects"), which the probe worker records as a ProbeWarning event.
 */
async function runHttp(h: HttpTarget, timeoutMs: number): Promise<ProbeOutcome> {
  let url = new URL(`${h.scheme.toLowerCase()}://${hostForUrl(h.host)}:${h.port}${h.path.startsWith('/') ? h.path : `/${h.path}`}`);
  const headers: Record<string, string> = {};
  for (const { name, value } of h.headers) headers[name] = value;
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'user-agent')) headers['User-Agent'] = PROBE_USER_AGENT;
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'accept')) headers.Accept = '*/*';
  const deadline = Date.now() + timeoutMs;
  for (let redirects = 0; ; redirects++) {
    const answer = await httpGet(url, headers, Math.max(1, deadline - Date.now()));
    if (typeof answer === 'string') return { result: 'failure', output: answer };
    const { code, location, body } = answer;
    if (code < 200 || code >= 400) return { result: 'failure', output: `HTTP probe failed with statuscode: ${code}` };
    if (code < 300) return { result: 'success', output: body };
    const next = FOLLOWED_REDIRECTS.has(code) && location !== undefined ? new URL(location, url) : undefined;
    if (next?.hostname !== url.hostname) {
      return { result: 'success', output: body, warning: `Probe terminated redirects, Response body: ${body}` };
    }
    if (redirects + 1 >= MAX_REDIRECTS) return { result: 'failure', output: `Get "${next.href}": stopped after ${MAX_REDIRECTS} redirects` };
    url = next;
  }
}

/** One GET; a string is the failure message (`Get "<url>": <why>`). */
function httpGet(url: URL, headers: Record<string, string>, timeoutMs: number): Promise<HttpAnswer | string> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.get(url, { headers, timeout: timerMs(timeoutMs), rejectUnauthorized: false }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        if (size < MAX_PROBE_OUTPUT_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      response.on('end', () => {
        resolve({ code: response.statusCode ?? 0, location: response.headers.location, body: Buffer.concat(chunks).toString('utf8') });
      });
      response.on('error', (error) => {
        resolve(`Get "${url.href}": ${error.message}`);
      });
    });
    request.on('timeout', () => {
      request.destroy(new Error(`context deadline exceeded (Client.Timeout exceeded while awaiting headers)`));
    });
    request.on('error', (error) => {
      resolve(`Get "${url.href}": ${error.message}`);
    });
  });
}

function runTcp(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise<ProbeOutcome>((resolve) => {
    const socket = net.connect({ host, port });
    const done = (outcome: ProbeOutcome): void => {
      socket.destroy();
      resolve(outcome);
    };
    socket.setTimeout(timerMs(timeoutMs), () => {
      done({ result: 'failure', output: `dial tcp ${hostForUrl(host)}:${port}: i/o timeout` });
    });
    socket.once('connect', () => {
      done({ result: 'success', output: '' });
    });
    socket.once('error', (error) => {
      done({ result: 'failure', output: `dial tcp ${hostForUrl(host)}:${port}: ${error.message}` });
    });
  });
}
