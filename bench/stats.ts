/**
 * Latency statistics of one benchmark batch. Every latency is measured from the moment the whole
 * batch was issued (all N pods at once), so a pod's latency includes its wait behind the others;
 * the batch's span is its largest latency, and its throughput N / span.
 */

/** What one batch of N pods measured. */
export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Pods per second from the batch's start to its last pod. */
  readonly throughputPerSec: number;
}

/** The nearest-rank percentile (`p` in 0..100) of the values; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? Number.NaN;
}

/** Summarizes latencies measured from one common batch start. */
export function summarize(latenciesMs: readonly number[]): LatencySummary {
  // A loop, not Math.max(...values): a 5,000-node burst measures 150,000 latencies, past what a spread passes as arguments.
  const maxMs = latenciesMs.length === 0 ? Number.NaN : latenciesMs.reduce((max, v) => Math.max(max, v), Number.NEGATIVE_INFINITY);
  return {
    count: latenciesMs.length,
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    maxMs,
    throughputPerSec: maxMs > 0 ? latenciesMs.length / (maxMs / 1000) : Number.NaN,
  };
}

/** Runs `task` over the items with at most `concurrency` at once (`undefined`: all at once). */
export async function inPool<T>(items: readonly T[], concurrency: number | undefined, task: (item: T) => Promise<void>): Promise<void> {
  const limit = concurrency === undefined ? items.length : Math.max(1, concurrency);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
