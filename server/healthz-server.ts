/**
 * The agent's local health endpoint, as the kubelet's `--healthz-port` / `--healthz-bind-address`
 * (127.0.0.1:10248 by default): plain HTTP on loopback, no authentication (it says nothing but
 * whether the agent is well), for the liveness and readiness probes of the agent's own pod.
 *
 * `/healthz` is liveness: the agent answers at all (a stuck event loop does not) and its pod
 * loop keeps turning (the kubelet's `syncloop` check). `/readyz` is readiness: the pods bound to
 * the node are watched and the runtime is ready, so a rollout waits for a new agent that works.
 * The answer lists each check as the Kubernetes components do (`[+]name ok`, `[-]name failed:
 * reason`), 200 when all pass, 500 otherwise. A port that cannot be bound is retried, never fatal:
 * the agent's pods matter more than its probe.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../util/clock.js';

/** One named check: undefined when it passes, else why it fails. */
export interface HealthCheck {
  readonly name: string;
  failure(): string | undefined;
}

/** What the server is built from. */
export interface HealthzServerOptions {
  readonly address: string;
  /** 0: an ephemeral port (tests). */
  readonly port: number;
  /** `/healthz`. */
  readonly liveness: readonly HealthCheck[];
  /** `/readyz` (the liveness checks too). */
  readonly readiness: readonly HealthCheck[];
  readonly clock: Clock;
  readonly logger: Logger;
}

/** The running server. */
export interface HealthzServer {
  start(): void;
  stop(): Promise<void>;
  /** The bound port, once listening. */
  port(): number | undefined;
}

const RETRY_LISTEN_MS = 5000;

/** The body and status of one health answer. */
export function healthAnswer(endpoint: string, checks: readonly HealthCheck[]): { status: number; body: string } {
  const lines: string[] = [];
  let failed = false;
  for (const check of checks) {
    const failure = check.failure();
    failed ||= failure !== undefined;
    lines.push(failure === undefined ? `[+]${check.name} ok` : `[-]${check.name} failed: ${failure}`);
  }
  lines.push(`${endpoint} check ${failed ? 'failed' : 'passed'}`);
  return { status: failed ? 500 : 200, body: `${lines.join('\n')}\n` };
}

/** See this file's header. */
export function createHealthzServer(options: HealthzServerOptions): HealthzServer {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    const checks = path === '/healthz' ? options.liveness : path === '/readyz' ? [...options.liveness, ...options.readiness] : undefined;
    if (req.method !== 'GET' || checks === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    const answer = healthAnswer(path.slice(1), checks);
    res.writeHead(answer.status, { 'Content-Type': 'text/plain; charset=utf-8' }).end(answer.body);
  });
  let retry: TimerHandle | undefined;
  let stopped = false;
  const listen = (): void => {
    if (stopped) return;
    server.once('error', (err) => {
      options.logger.error({ err, address: options.address, port: options.port, retryInMs: RETRY_LISTEN_MS }, 'healthz: cannot listen; retrying');
      retry = options.clock.setTimeout(listen, RETRY_LISTEN_MS);
    });
    server.listen(options.port, options.address, () => {
      server.removeAllListeners('error');
      options.logger.info({ address: options.address, port: (server.address() as AddressInfo).port }, 'healthz: serving /healthz and /readyz');
    });
  };
  return {
    start: listen,
    async stop() {
      stopped = true;
      options.clock.clearTimeout(retry);
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
    },
    port: () => (server.listening ? (server.address() as AddressInfo).port : undefined),
  };
}
