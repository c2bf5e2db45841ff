/**
 * `GET /stats/summary` (JSON Summary API) and `GET /metrics/resource` (Prometheus text), both
 * from the StatsCollector. The authorizer has already asked for `nodes/stats` or `nodes/metrics`.
 * A summary the runtime cannot answer is a 500 as with the kubelet; a metrics scrape then still
 * answers 200 with the error gauges at 1, as the kubelet's collector reports a failed gather.
 */
import type { Logger } from 'pino';
import { resourceMetrics } from './resource-metrics.js';
import { sendJson, sendText, type Route, type RouteRequest } from './routes.js';
import type { StatsCollector } from './stats-collector.js';

/** The Prometheus text format's content type. */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

export function statsRoutes(stats: StatsCollector, logger: Logger): Route[] {
  const summary = async ({ res }: RouteRequest): Promise<void> => {
    try {
      sendJson(res, 200, await stats.summary(true));
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
