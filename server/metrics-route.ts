/**
 * `GET /metrics`: the node's metrics in the Prometheus text format (`node-metrics.ts`), and
 * `GET /metrics/probes`, the probe workers' (`probe-metrics.ts`). The
 * authorizer has already asked for `nodes/metrics`. A part that cannot be read at scrape time (the
 * queue's depth while Redis is down) is logged and its last figures served: the scrape still
 * answers 200, as a Prometheus collector that fails does not fail the whole gather.
 */
import type { Logger } from 'pino';
import type { Route, RouteRequest } from './routes.js';
import { PROMETHEUS_TEXT } from './stats-routes.js';

interface Exposition {
  expose(onError?: (error: unknown) => void): Promise<string>;
}

function handlerOf(metrics: Exposition, logger: Logger): (request: RouteRequest) => Promise<void> {
  return async ({ res }) => {
    const text = await metrics.expose((error) => {
      logger.warn({ err: error }, 'a metrics collector failed; serving its last figures');
    });
    res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
}

/** `/metrics`, and `/metrics/probes` when given (the probes' own registry, as the kubelet's). */
export function metricsRoutes(metrics: Exposition & { readonly probes?: Exposition }, logger: Logger): Route[] {
  const routes: Route[] = [{ method: 'GET', pattern: '/metrics', handler: handlerOf(metrics, logger) }];
  if (metrics.probes !== undefined) routes.push({ method: 'GET', pattern: '/metrics/probes', handler: handlerOf(metrics.probes, logger) });
  return routes;
}
