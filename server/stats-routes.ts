/**
 * `GET /stats/summary` (JSON Summary API; `?only_cpu_and_memory=true` for CPU and memory only) and `GET /metrics/resource` (Prometheus text), both
 * from the StatsCollector. The authorizer has already asked for `nodes/stats` or `nodes/metrics`.
 * A summary the runtime cannot answer is a 500 as with the kubelet; a metrics scrape then still
 * answers 200 with the error gauges at 1, as the kubelet's collector reports a failed gather.
 */
import type { Logger } from 'pino';
import type { CadvisorCollector } from './cadvisor-collector.js';
import { resourceMetrics } from './resource-metrics.js';
import { sendJson, sendText, type Route, type RouteRequest } from './routes.js';
import type { StatsCollector } from './stats-collector.js';
import { cpuAndMemoryOnly } from './summary.js';

/** The Prometheus text format's content type. */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

export function statsRoutes(stats: StatsCollector, logger: Logger): Route[] {
  const summary = async ({ res, query }: RouteRequest): Promise<void> => {
    // The kubelet's CPU-and-memory answer (older metrics-servers ask for it) only reads the CPU readings.
    const only = query.get('only_cpu_and_memory') === 'true';
    try {
      sendJson(res, 200, only ? cpuAndMemoryOnly(await stats.summary(false)) : await stats.summary(true));
    } catch (error) {
      logger.warn({ err: error }, 'stats summary failed');
      sendText(res, 500, `Internal Error: failed to get summary stats: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const metrics = async ({ res }: RouteRequest): Promise<void> => {
    let text: string;
    try {
      text = resourceMetrics(await stats.summary(false));
    } catch (error) {
      logger.warn({ err: error }, 'resource metrics scrape failed');
      text = resourceMetrics(undefined);
    }
    res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  return [
    { method: 'GET', pattern: '/stats/summary', handler: summary },
    { method: 'GET', pattern: '/metrics/resource', handler: metrics },
  ];
}

/**
 * `GET /metrics/cadvisor` (`nodes/metrics`): the kubelet's cAdvisor families (cadvisor-collector.ts).
 * Always 200: what could not be read shows in `container_scrape_error` / `machine_scrape_error`,
 * as the kubelet's handler continues on a collector's error. The scrape stops when the client goes.
 */
export function cadvisorRoute(collector: CadvisorCollector): Route {
  const handler = async ({ res }: RouteRequest): Promise<void> => {
    const gone = new AbortController();
    res.on('close', () => {
      gone.abort();
    });
    const text = await collector.scrape(gone.signal);
    res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  return { method: 'GET', pattern: '/metrics/cadvisor', handler };
}
