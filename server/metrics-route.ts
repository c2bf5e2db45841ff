/**
 * `GET /metrics`: the node's metrics in the Prometheus text format (`node-metrics.ts`). The
 * authorizer has already asked for `nodes/metrics`. A part that cannot be read at scrape time (the
 * queue's depth while Redis is down) is logged and its last figures served: the scrape still
 * answers 200, as a Prometheus collector that fails does not fail the whole gather.
 */
import type { Logger } from 'pino';
import type { Route, RouteRequest } from './routes.js';
import { PROMETHEUS_TEXT } from './stats-routes.js';

export function metricsRoutes(metrics: { expose(onError?: (error: unknown) => void): Promise<string> }, logger: Logger): Route[] {
  const handler = async ({ res }: RouteRequest): Promise<void> => {
    const text = await metrics.expose((error) => {
      logger.warn({ err: error }, 'a metrics collector failed; serving its last figures');
    });
    res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  return [{ method: 'GET', pattern: '/metrics', handler }];
}
