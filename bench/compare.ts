/**
 * The side-by-side pod-startup benchmark's numbers: one sample per measure, N, path and round, and
 * what the report makes of them (min / median / max per path, and per-round ratios between paths,
 * whose median is the headline: the paths of one round ran back to back, so a ratio within a round
 * cancels what drifts between rounds). Pure: no I/O.
 */

/** What ran the pods: the two agents, each on its own node, and the runtime driven directly. */
export type Target = 'nodelet' | 'kubelet' | 'raw CRI';
export const TARGETS: readonly Target[] = ['nodelet', 'kubelet', 'raw CRI'];

/** Every measure the benchmark takes, in the order the report lists them. */
export const MEASURES = {
  'create.p50': { label: 'create → Running, p50', unit: 's', better: 'lower' },
  'create.p99': { label: 'create → Running, p99', unit: 's', better: 'lower' },
  'create.throughput': { label: 'throughput (pods Running ÷ time to the last)', unit: 'pods/s', better: 'higher' },
  'create.rejected': { label: 'pods rejected at admission (Failed)', unit: 'pods', better: 'lower' },
  'delete.gone': { label: 'delete → gone (API and runtime)', unit: 's', better: 'lower' },
  'agent.cpuPerPod': { label: 'agent CPU per pod (create + delete)', unit: 'ms', better: 'lower' },
  'agent.peakRss': { label: 'agent peak RSS (create + delete)', unit: 'MiB', better: 'lower' },
  'idle.cpu': { label: 'agent idle CPU with the pods Running', unit: 'millicores', better: 'lower' },
  'idle.rss': { label: 'agent idle RSS with the pods Running', unit: 'MiB', better: 'lower' },
  'fresh.p50': { label: 'status freshness (container exit → API), p50', unit: 's', better: 'lower' },
  'fresh.max': { label: 'status freshness (container exit → API), max', unit: 's', better: 'lower' },
  'steady.p50': { label: 'steady 1 pod/s: create → Running, p50', unit: 's', better: 'lower' },
  'steady.p99': { label: 'steady 1 pod/s: create → Running, p99', unit: 's', better: 'lower' },
  'steady.cpuPerPod': { label: 'steady 1 pod/s: agent CPU per pod', unit: 'ms', better: 'lower' },
} as const satisfies Record<string, { label: string; unit: string; better: 'lower' | 'higher' }>;

export type MeasureId = keyof typeof MEASURES;
const MEASURE_ORDER = Object.keys(MEASURES) as MeasureId[];

/** One number: a measure of one path, at one N (undefined for measures without one), in one round. */
export interface Sample {
  readonly measure: MeasureId;
  readonly size: number | undefined;
  readonly target: Target;
  readonly round: number;
  readonly value: number;
}

/** min / median / max of a set of values. */
export interface Spread {
  readonly count: number;
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

/** The median (the mean of the two middle values for an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = Math.floor(finite.length / 2);
  const upper = finite[mid] ?? Number.NaN;
  return finite.length % 2 === 1 ? upper : ((finite[mid - 1] ?? Number.NaN) + upper) / 2;
}

/** min / median / max of the finite values; undefined when there is none. */
export function spread(values: readonly number[]): Spread | undefined {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return undefined;
  return { count: finite.length, min: Math.min(...finite), median: median(finite), max: Math.max(...finite) };
}

/** `min / median / max` with `digits` decimals, as the reports print a spread; 'n/a' for no finite value. */
export function spreadText(values: readonly number[], digits = 1): string {
  const s = spread(values);
  if (s === undefined) return 'n/a';
  return `${s.min.toFixed(digits)} / ${s.median.toFixed(digits)} / ${s.max.toFixed(digits)}`;
}

/** A measure at one N (the row of the report). */
export interface RowKey {
  readonly measure: MeasureId;
  readonly size: number | undefined;
}

/** The (measure, N) pairs with samples, in the report's order: measures as listed, then by N. */
export function rowKeys(samples: readonly Sample[]): RowKey[] {
  const seen = new Map<string, RowKey>();
  for (const s of samples) seen.set(`${s.measure}|${s.size ?? ''}`, { measure: s.measure, size: s.size });
  return [...seen.values()].sort((a, b) => MEASURE_ORDER.indexOf(a.measure) - MEASURE_ORDER.indexOf(b.measure) || (a.size ?? 0) - (b.size ?? 0));
}

const matches = (s: Sample, key: RowKey, target: Target): boolean => s.measure === key.measure && s.size === key.size && s.target === target;

/** The values of one row for one path, in round order. */
export function valuesOf(samples: readonly Sample[], key: RowKey, target: Target): number[] {
  return samples.filter((s) => matches(s, key, target)).sort((a, b) => a.round - b.round).map((s) => s.value);
}

/** Per round that measured both paths (and a non-zero denominator): numerator ÷ denominator. */
export function roundRatios(samples: readonly Sample[], key: RowKey, numerator: Target, denominator: Target): number[] {
  const rounds = [...new Set(samples.filter((s) => matches(s, key, numerator)).map((s) => s.round))].sort((a, b) => a - b);
  return rounds.flatMap((round) => {
    const top = samples.find((s) => matches(s, key, numerator) && s.round === round)?.value;
    const bottom = samples.find((s) => matches(s, key, denominator) && s.round === round)?.value;
    if (top === undefined || bottom === undefined || !Number.isFinite(top) || !Number.isFinite(bottom) || bottom === 0) return [];
    return [top / bottom];
  });
}

/**
 * The order of the paths in one round: rotated every round, so no path always runs first (after a
 * quiet pause) or last (after the others warmed caches and filled the runtime's state).
 */
export function roundOrder<T>(targets: readonly T[], round: number): T[] {
  const shift = targets.length === 0 ? 0 : round % targets.length;
  return [...targets.slice(shift), ...targets.slice(0, shift)];
}
