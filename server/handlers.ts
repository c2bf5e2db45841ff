/**
 * The node server's routes: `/healthz`, `/pods`, `/containerLogs/{namespace}/{pod}/{container}`,
 * `/logs/…` (the node's log directory: node-logs.ts), `/checkpoint/…` (checkpoint.ts), and the streaming ones (`/exec`, `/attach`, `/portForward`, `/run`: streaming.ts).
 * `/pods` lists the pods this node runs, from the desired-pod store, as a PodList (the kubelet
 * answers from its pod manager). The container logs are streamed as they are read (chunked), with
 * the kubelet's status codes and messages for what it refuses (log-options.ts, container-logs.ts).
 */
import { access } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../util/clock.js';
import { findPod, isContainerLogsError, isRunning, locateLog, type LogRuntime } from './container-logs.js';
import { isLogOptionsError, parseLogQuery, readOptions } from './log-options.js';
import { readLogs } from './log-reader.js';
import { serveNodeLogsWithQuery } from './node-log-query-server.js';
import { serveNodeLogs } from './node-logs.js';
import { sendJson, sendText, type Route, type RouteRequest } from './routes.js';
import type { StatsCollector } from './stats-collector.js';
import { metricsRoutes } from './metrics-route.js';
import { cadvisorRoute, statsRoutes } from './stats-routes.js';
import type { CadvisorCollector } from './cadvisor-collector.js';
import { streamingRoutes, type StreamRuntime } from './streaming.js';
import { checkpointRoutes, type CheckpointDeps } from './checkpoint.js';
import type { Logger } from 'pino';

/** What the routes read. */
export interface RouteDeps {
  /** The pods this node runs (the desired-pod store). */
  readonly pods: { list(): V1Pod[] };
  readonly runtime: LogRuntime & StreamRuntime;
  readonly clock: Clock;
  /** How often a follower looks at a log file that has not grown. */
  readonly followPollMs: number;
  /** Limit on reaching the runtime's streaming server and on its upgrade answer. */
  readonly proxyTimeoutMs: number;
  /** The runtime's limit on a `/run` command. */
  readonly runTimeoutSeconds: number;
  /** The directory `/logs/` serves (the kubelet's /var/log); absent: `/logs/` is not served (404). */
  readonly nodeLogDir?: string;
  /** `/logs/?query=…` is the node log query (the kubelet's `enableSystemLogQuery`); otherwise the query string is ignored. */
  readonly nodeLogQuery?: boolean;
  /** Serves `/checkpoint/…` when given: the runtime that checkpoints, and the root whose `checkpoints` directory holds the archives. */
  readonly checkpoint?: Pick<CheckpointDeps, 'runtime' | 'rootDir'>;
  /** Serves `/stats/summary` and `/metrics/resource` when given. */
  readonly stats?: { readonly collector: StatsCollector; readonly logger: Logger };
  /** Serves `/metrics/cadvisor` when given. */
  readonly cadvisor?: CadvisorCollector;
  /** Serves `/configz` when given: the node's configuration as a KubeletConfiguration. */
  readonly configz?: () => Readonly<Record<string, unknown>>;
  /** Serves `/metrics` when given. */
  readonly metrics?: { readonly registry: { expose(onError?: (error: unknown) => void): Promise<string>; readonly probes?: { expose(onError?: (error: unknown) => void): Promise<string> } }; readonly logger: Logger };
}

/** `GET /configz` (`nodes/configz`): `{"kubeletconfig": …}`, as component-base's configz handler writes it. */
function configzRoute(configz: () => Readonly<Record<string, unknown>>): Route {
  const handler = ({ res }: RouteRequest): Promise<void> => {
    sendJson(res, 200, { kubeletconfig: configz() });
    return Promise.resolve();
  };
  return { method: 'GET', pattern: '/configz', handler, getOnly: true };
}

/** Writes `chunk`; resolves when the response can take more (or the client went away). */
function writer(res: ServerResponse): (chunk: Buffer) => Promise<void> {
  return (chunk) =>
    new Promise<void>((resolve) => {
      if (res.write(chunk)) {
        resolve();
        return;
      }
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
}

function sleeper(clock: Clock, ms: number): (signal: AbortSignal) => Promise<void> {
  return (signal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const onAbort = (): void => {
        clock.clearTimeout(timer);
        resolve();
      };
      const timer = clock.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
}

async function containerLogs(request: RouteRequest, deps: RouteDeps): Promise<void> {
  const { res, query } = request;
  const [namespace = '', podName = '', container = ''] = request.params;
  try {
    const options = parseLogQuery(query);
    const pod = findPod(deps.pods.list(), namespace, podName);
    const target = await locateLog(deps.runtime, pod, { container, previous: options.previous });
    try {
      await access(target.logPath);
    } catch (error) {
      sendText(res, 400, `failed to open log file "${target.logPath}": ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const abort = new AbortController();
    res.on('close', () => {
      abort.abort();
    });
    // Headers at once: a follower sees the stream open before the first new line.
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.flushHeaders();
    await readLogs(target.logPath, readOptions(options, deps.clock.now()), {
      write: writer(res),
      isRunning: () => isRunning(deps.runtime, target.containerId),
      wait: sleeper(deps.clock, deps.followPollMs),
      signal: abort.signal,
    });
    res.end();
  } catch (error) {
    if (isLogOptionsError(error) || isContainerLogsError(error)) {
      sendText(res, error.status, error.message);
      return;
    }
    throw error;
  }
}

/** `/logs/`: the file server, or the node log query in front of it (the kubelet's `enableSystemLogQuery`). */
function nodeLogsHandler(dir: string, query: boolean): (request: RouteRequest) => Promise<void> {
  return query ? (request) => serveNodeLogsWithQuery(request, { dir }) : (request) => serveNodeLogs(request, { dir });
}

/** The routes, for `node-server.ts` to match. */
export function nodeRoutes(deps: RouteDeps): Route[] {
  const healthz = ({ res }: RouteRequest): Promise<void> => {
    sendText(res, 200, 'ok');
    return Promise.resolve();
  };
  const pods = ({ res }: RouteRequest): Promise<void> => {
    sendJson(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: deps.pods.list() });
    return Promise.resolve();
  };
  return [
    { method: 'GET', pattern: '/healthz', handler: healthz },
    { method: 'GET', pattern: '/pods', handler: pods, getOnly: true },
    { method: 'GET', pattern: '/containerLogs/{}/{}/{}', handler: (request) => containerLogs(request, deps), getOnly: true },
    ...(deps.nodeLogDir === undefined ? [] : [{ method: 'GET', pattern: '/logs/{*}', handler: nodeLogsHandler(deps.nodeLogDir, deps.nodeLogQuery === true), getOnly: true }]),
    ...streamingRoutes(deps),
    ...(deps.checkpoint === undefined ? [] : checkpointRoutes({ ...deps.checkpoint, pods: deps.pods, clock: deps.clock })),
    ...(deps.stats === undefined ? [] : statsRoutes(deps.stats.collector, deps.stats.logger)),
    ...(deps.cadvisor === undefined ? [] : [cadvisorRoute(deps.cadvisor)]),
    ...(deps.metrics === undefined ? [] : metricsRoutes(deps.metrics.registry, deps.metrics.logger)),
    ...(deps.configz === undefined ? [] : [configzRoute(deps.configz)]),
  ];
}
