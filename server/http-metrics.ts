/**
 * The node server's own requests, as the kubelet's `ServeHTTP` counts them
 * (`kubelet_http_requests_total`, `kubelet_http_requests_duration_seconds`,
 * `kubelet_http_inflight_requests`): every request that reaches the server, before authentication,
 * labelled by its method and the root of its path, bucketed as the kubelet buckets them so the
 * label set stays bounded whatever a client sends.
 */
import { DEFAULT_BUCKETS, type MetricsRegistry } from '../util/metrics.js';

/** The methods the kubelet keeps as labels; any other is `other`. */
const METHOD_BUCKETS: ReadonlySet<string> = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT']);

/**
 * The path roots the kubelet registers on its authenticated server (v1.37.2, default gates:
 * `flagz`, `statusz` and `checkpoint` on, `allocatedPods` off); any other root is `other`.
 */
const PATH_BUCKETS: ReadonlySet<string> = new Set([
  'healthz', 'pods', 'stats', 'metrics', 'metrics/cadvisor', 'metrics/probes', 'metrics/resource', 'run', 'exec', 'attach',
  'portForward', 'containerLogs', 'configz', 'runningpods', 'checkpoint', 'pprof', 'logs', 'debug', 'flagz', 'statusz',
]);

/**
 * The kubelet's long-running roots. It lists `portforward` in lower case while the bucket is
 * `portForward`, so a port-forward is labelled `long_running="false"` there: kept, so the same
 * request has the same labels on both agents.
 */
const LONG_RUNNING: ReadonlySet<string> = new Set(['exec', 'attach', 'portforward', 'debug']);

/** The root of a request path: its first segment, or the first two under `metrics/`. Pure. */
export function urlRootPath(path: string): string {
  const parts = path.replace(/^\//, '').split('/');
  const first = parts[0] ?? '';
  return first === 'metrics' && parts.length > 1 ? `metrics/${parts[1] ?? ''}` : first;
}

/** The labels of one request. Pure. */
export function httpRequestLabels(method: string, path: string): Readonly<Record<string, string>> {
  const root = urlRootPath(path);
  const bucket = PATH_BUCKETS.has(root) ? root : 'other';
  return {
    method: METHOD_BUCKETS.has(method) ? method : 'other',
    path: bucket,
    // nodelet serves no unauthenticated read-only port: every request is on the read-write server.
    server_type: 'readwrite',
    long_running: String(LONG_RUNNING.has(bucket)),
  };
}

/** Hears the node server's requests; must not throw. */
export interface NodeHttpMetrics {
  /** A request arrived; the returned function is called once when its exchange ended. */
  requestStarted(method: string, path: string): () => void;
}

const alpha = (help: string): string => `[ALPHA] ${help}`;

/** Registers the three families; `now` gives milliseconds (the agent's clock). */
export function httpMetrics(registry: MetricsRegistry, now: () => number): NodeHttpMetrics {
  // Sorted, as the Go client writes label pairs.
  const labelNames = ['long_running', 'method', 'path', 'server_type'];
  const total = registry.counter({ name: 'kubelet_http_requests_total', help: alpha('Number of the http requests received since the server started'), labelNames });
  const duration = registry.histogram({ name: 'kubelet_http_requests_duration_seconds', help: alpha('Duration in seconds to serve http requests'), labelNames, buckets: DEFAULT_BUCKETS });
  const inflight = registry.gauge({ name: 'kubelet_http_inflight_requests', help: alpha('Number of the inflight http requests'), labelNames });
  const open = new Map<string, number>();
  const move = (labels: Readonly<Record<string, string>>, by: number): void => {
    const key = JSON.stringify(labels);
    const n = (open.get(key) ?? 0) + by;
    open.set(key, n);
    inflight.set(labels, n);
  };
  return {
    requestStarted: (method, path) => {
      const labels = httpRequestLabels(method, path);
      const startedMs = now();
      total.inc(labels);
      move(labels, 1);
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        move(labels, -1);
        duration.observe(labels, Math.max(0, now() - startedMs) / 1000);
      };
    },
  };
}
