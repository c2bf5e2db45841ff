/**
 * The agent's API requests as client-go's `rest_client_*` metrics (component-base v0.37.2,
 * `metrics/prometheus/restclient`): requests by status code, method and host; latency, request
 * and response sizes by verb and host. Recorded by nodelet's own client (`kube/transport.ts`),
 * which hands each request's outcome to {@link restClientMetrics} through the narrow
 * `KubeRequestMetrics` the assembly passes down. As client-go: a watch counts in
 * `rest_client_requests_total` only (its latency and sizes are a stream's, not a request's); a
 * request with no answer counts with code `<error>`; a response size is observed when the request
 * succeeded or its answer had a body.
 *
 * `rest_client_rate_limiter_duration_seconds` is each rate-limited request's wait for its token
 * (`--kube-api-qps`, kube/rate-limit.ts), 0 included, as client-go's `tryThrottle` observes it;
 * requests of a client without a limiter (the heartbeats') are not observed, as in client-go.
 *
 * Not here, for want of the thing measured: `rest_client_request_retries_total` (it retries no
 * request itself: its callers' loops do), `rest_client_dns_resolution_duration_seconds`,
 * `rest_client_exec_plugin_*` (no exec credential plugins) and `rest_client_transport_*` (no
 * shared transport cache); see docs/node-server.md.
 */
import type { KubeRequestMetrics } from '../kube/transport.js';
import type { MetricsRegistry } from '../util/metrics.js';

/** client-go's latency buckets (seconds). */
export const REST_CLIENT_LATENCY_BUCKETS: readonly number[] = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
/** client-go's size buckets (bytes). */
export const REST_CLIENT_SIZE_BUCKETS: readonly number[] = [64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216];

const alpha = (help: string): string => `[ALPHA] ${help}`;

/** Registers the families and returns the recorder the API client is built with. */
export function restClientMetrics(registry: MetricsRegistry): KubeRequestMetrics {
  // Sorted, as the Go client writes label pairs.
  const byVerb = ['host', 'verb'];
  const total = registry.counter({ name: 'rest_client_requests_total', help: alpha('Number of HTTP requests, partitioned by status code, method, and host.'), labelNames: ['code', 'host', 'method'] });
  const latency = registry.histogram({ name: 'rest_client_request_duration_seconds', help: alpha('Request latency in seconds. Broken down by verb, and host.'), labelNames: byVerb, buckets: REST_CLIENT_LATENCY_BUCKETS });
  const requestSize = registry.histogram({ name: 'rest_client_request_size_bytes', help: alpha('Request size in bytes. Broken down by verb and host.'), labelNames: byVerb, buckets: REST_CLIENT_SIZE_BUCKETS });
  const responseSize = registry.histogram({ name: 'rest_client_response_size_bytes', help: alpha('Response size in bytes. Broken down by verb and host.'), labelNames: byVerb, buckets: REST_CLIENT_SIZE_BUCKETS });
  const rateLimiter = registry.histogram({ name: 'rest_client_rate_limiter_duration_seconds', help: alpha('Client side rate limiter latency in seconds. Broken down by verb, and host.'), labelNames: byVerb, buckets: REST_CLIENT_LATENCY_BUCKETS });
  return {
    rateLimited: ({ method, host, seconds }) => {
      rateLimiter.observe({ verb: method, host }, seconds);
    },
    requestDone: (sample) => {
      const { method, host, code } = sample;
      total.inc({ code, method, host });
      if (sample.watch) return;
      const labels = { verb: method, host };
      latency.observe(labels, sample.seconds);
      requestSize.observe(labels, sample.requestBytes);
      const answered = sample.responseBytes;
      if (answered !== undefined && (code.startsWith('2') || answered > 0)) responseSize.observe(labels, answered);
    },
  };
}
