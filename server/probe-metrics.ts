/**
 * `/metrics/probes`, as the kubelet serves it (its own registry, `pkg/kubelet/server`):
 * `process_start_time_seconds`, `prober_probe_total` (BETA; by probe type, result, container, pod,
 * namespace and pod UID) and `prober_probe_duration_seconds` (ALPHA; the Go client's default
 * buckets; observed for successful and unknown results only, as the kubelet's worker does). A
 * worker that ends takes its series with it.
 */
import type { ProbeMetrics, ProbeSeries } from '../reconcilers/probes/probe-metrics.js';
import { DEFAULT_BUCKETS, MetricsRegistry } from '../util/metrics.js';
import { registerProcessStartTime } from './process-metrics.js';

/** The kubelet's result label values. */
const RESULT_LABEL = { success: 'successful', failure: 'failed', unknown: 'unknown' } as const;

/** The probe registry and its recorder. */
export interface ProbeMetricsExposition {
  readonly recorder: ProbeMetrics;
  expose(onError?: (error: unknown) => void): Promise<string>;
}

function durationLabels(series: ProbeSeries): Record<string, string> {
  return { probe_type: series.probeType, container: series.container, pod: series.pod, namespace: series.namespace };
}

function resultLabels(series: ProbeSeries, result: keyof typeof RESULT_LABEL): Record<string, string> {
  return { ...durationLabels(series), pod_uid: series.podUid, result: RESULT_LABEL[result] };
}

export function createProbeMetrics(): ProbeMetricsExposition {
  const registry = new MetricsRegistry();
  const total = registry.counter({
    name: 'prober_probe_total',
    help: '[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.',
    labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
  });
  const duration = registry.histogram({
    name: 'prober_probe_duration_seconds',
    help: '[ALPHA] Duration in seconds for a probe response.',
    labelNames: ['probe_type', 'container', 'pod', 'namespace'],
    buckets: DEFAULT_BUCKETS,
  });
  // Only the start time: the kubelet registers nothing else of the process here.
  registerProcessStartTime(registry);
  return {
    recorder: {
      probed: (series, result, seconds) => {
        total.inc(resultLabels(series, result));
        if (result !== 'failure') duration.observe(durationLabels(series), seconds);
      },
      forget: (series) => {
        for (const result of ['success', 'failure', 'unknown'] as const) total.remove(resultLabels(series, result));
        duration.remove(durationLabels(series));
      },
    },
    expose: (onError) => registry.expose(onError),
  };
}
