/**
 * What a probe worker tells the node's `/metrics/probes` (the kubelet's `prober_probe_total` and
 * `prober_probe_duration_seconds`): each probe run's result and time, and when the worker ends, that
 * its series go (the kubelet deletes them with the worker).
 */
import type { ProbeResult } from './probe-worker-state.js';

/** One worker's series: the kubelet's labels. */
export interface ProbeSeries {
  /** `Liveness`, `Readiness` or `Startup`, as the kubelet's probeType.String(). */
  readonly probeType: string;
  readonly container: string;
  readonly pod: string;
  readonly namespace: string;
  readonly podUid: string;
}

export interface ProbeMetrics {
  /** A probe ran: its result and how long it took. */
  probed(series: ProbeSeries, result: ProbeResult, seconds: number): void;
  /** The worker ended: its series are dropped. */
  forget(series: ProbeSeries): void;
}
