/**
 * A small metrics registry with the Prometheus text exposition format (0.0.4): counters, gauges and
 * histograms, each a family of series keyed by label values, as the Go client (and so the kubelet)
 * writes them:
 *
 * - `# HELP` and `# TYPE` per family; families sorted by name, series by their label values.
 * - A family with label names has no series until one is recorded (the Go client's vectors are
 *   absent from a scrape until then); a family without labels always has its one series, from 0.
 * - A histogram's series is `_bucket{…,le="…"}` (cumulative, up to `le="+Inf"`), `_sum`, `_count`.
 * - Label values escape `\`, `"` and newlines; help text `\` and newlines.
 *
 * Recording never throws for a known family: recorders sit on the runtime's call path, where a
 * metrics fault must never fail a pod operation. Label sets are fixed in code, so a wrong set is a
 * programmer error, reported by a TypeError at the first recording (a unit test catches it).
 */

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

/** What every family is declared with. */
export interface FamilyOptions {
  readonly name: string;
  readonly help: string;
  /** The label names each series has, in order; none for a single-series family. */
  readonly labelNames?: readonly string[];
}

/** A monotonically increasing count. */
export interface Counter {
  /** Adds `by` (default 1; must not be negative) to the series of `labels`. */
  inc(labels?: Labels, by?: number): void;
  /** Drops the series of `labels` (the Go client's `Delete`): its object is gone. */
  remove(labels: Labels): void;
}

/** A value that goes up and down. */
export interface Gauge {
  set(labels: Labels, value: number): void;
  /** Removes every series (a gauge recomputed from scratch drops the series that went away). */
  clear(): void;
}

/** Observations counted into cumulative buckets. */
export interface Histogram {
  observe(labels: Labels, value: number): void;
  /** Drops the series of `labels` (the Go client's `Delete`). */
  remove(labels: Labels): void;
}

/** The Go client's default buckets (`prometheus.DefBuckets`), in seconds. */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** `count` buckets from `start`, each `factor` times the one before (the Go client's ExponentialBuckets). */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const buckets: number[] = [];
  for (let i = 0, bound = start; i < count; i++, bound *= factor) buckets.push(bound);
  return buckets;
}

/**
 * A number as the Go client writes it (`strconv.FormatFloat(v, 'g', -1, 64)`): the shortest digits
 * that read back exactly, in exponent form (`1.048576e+06`, `1.803e-06`) when the decimal exponent
 * is below -4 or at least 6, so a bucket bound or a timestamp reads the same on both agents.
 */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (value === 0) return '0';
  const [mantissa = '', exponent = '0'] = value.toExponential().split('e');
  const exp = Number(exponent);
  if (exp >= -4 && exp < 6) return String(value);
  const digits = String(Math.abs(exp)).padStart(2, '0');
  return `${mantissa}e${exp < 0 ? '-' : '+'}${digits}`;
}

/** A label value escaped as the text format requires. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelText(pairs: readonly (readonly [string, string])[]): string {
  return pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

type Kind = 'counter' | 'gauge' | 'histogram';

/** One family: its declaration and its series by label values. */
abstract class Family<S> {
  protected readonly series = new Map<string, { readonly values: readonly string[]; state: S }>();
  readonly labelNames: readonly string[];

  constructor(
    readonly options: FamilyOptions,
    readonly kind: Kind,
  ) {
    this.labelNames = options.labelNames ?? [];
  }

  protected abstract fresh(): S;
  protected abstract lines(prefix: string, pairs: readonly (readonly [string, string])[], state: S): string[];

  /** Drops the series of exactly these label values; no such series, nothing to do. */
  remove(labels: Labels): void {
    this.series.delete(JSON.stringify(this.labelNames.map((name) => labels[name] ?? '')));
  }

  protected stateOf(labels: Labels | undefined): S {
    const values = this.labelNames.map((name) => {
      const value = labels?.[name];
      if (value === undefined) throw new TypeError(`metric ${this.options.name}: label "${name}" missing`);
      return value;
    });
    if (Object.keys(labels ?? {}).length !== values.length) throw new TypeError(`metric ${this.options.name}: labels must be exactly ${this.labelNames.join(',')}`);
    const key = JSON.stringify(values);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { values, state: this.fresh() };
      this.series.set(key, entry);
    }
    return entry.state;
  }

  /** The family's text, or nothing when it has no series. */
  render(): string[] {
    if (this.labelNames.length === 0 && this.series.size === 0) this.stateOf(undefined);
    if (this.series.size === 0) return [];
    const { name, help } = this.options;
    const sorted = [...this.series.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const body = sorted.flatMap(([, entry]) => this.lines(name, entry.values.map((v, i) => [this.labelNames[i] ?? '', v] as const), entry.state));
    return [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${this.kind}`, ...body];
  }
}

class CounterFamily extends Family<{ value: number }> implements Counter {
  constructor(options: FamilyOptions) {
    super(options, 'counter');
  }
  protected fresh(): { value: number } {
    return { value: 0 };
  }
  protected lines(name: string, pairs: readonly (readonly [string, string])[], state: { value: number }): string[] {
    return [`${name}${labelText(pairs)} ${formatValue(state.value)}`];
  }
  inc(labels?: Labels, by = 1): void {
    // A counter never goes down; a negative or NaN step is dropped rather than breaking the series.
    if (!(by >= 0)) return;
    this.stateOf(labels).value += by;
  }
}

class GaugeFamily extends Family<{ value: number }> implements Gauge {
  constructor(options: FamilyOptions) {
    super(options, 'gauge');
  }
  protected fresh(): { value: number } {
    return { value: 0 };
  }
  protected lines(name: string, pairs: readonly (readonly [string, string])[], state: { value: number }): string[] {
    return [`${name}${labelText(pairs)} ${formatValue(state.value)}`];
  }
  set(labels: Labels, value: number): void {
    this.stateOf(labels).value = value;
  }
  clear(): void {
    this.series.clear();
  }
}

interface HistogramState {
  readonly counts: number[];
  sum: number;
  count: number;
}

class HistogramFamily extends Family<HistogramState> implements Histogram {
  private readonly buckets: readonly number[];

  constructor(options: FamilyOptions & { readonly buckets: readonly number[] }) {
    super(options, 'histogram');
    if (options.labelNames?.includes('le') === true) throw new TypeError(`metric ${options.name}: "le" is reserved`);
    this.buckets = [...options.buckets].sort((a, b) => a - b);
  }
  protected fresh(): HistogramState {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }
  protected lines(name: string, pairs: readonly (readonly [string, string])[], state: HistogramState): string[] {
    const bucketLines = this.buckets.map((bound, i) => `${name}_bucket${labelText([...pairs, ['le', formatValue(bound)]])} ${String(state.counts[i] ?? 0)}`);
    return [
      ...bucketLines,
      `${name}_bucket${labelText([...pairs, ['le', '+Inf']])} ${String(state.count)}`,
      `${name}_sum${labelText(pairs)} ${formatValue(state.sum)}`,
      `${name}_count${labelText(pairs)} ${String(state.count)}`,
    ];
  }
  observe(labels: Labels, value: number): void {
    if (Number.isNaN(value)) return;
    const state = this.stateOf(labels);
    // Cumulative buckets: every bound at or above the value counts it.
    for (const [i, bound] of this.buckets.entries()) if (value <= bound) state.counts[i] = (state.counts[i] ?? 0) + 1;
    state.sum += value;
    state.count += 1;
  }
}

type AnyFamily = CounterFamily | GaugeFamily | HistogramFamily;

/** Refreshes gauges just before a scrape (e.g. reads the queue's depth); may fail, then its families keep their last values. */
export type Collector = () => Promise<void>;

/** The families of one exposition. */
export class MetricsRegistry {
  private readonly families = new Map<string, AnyFamily>();
  private readonly collectors: Collector[] = [];

  counter(options: FamilyOptions): Counter {
    return this.add(new CounterFamily(options));
  }

  gauge(options: FamilyOptions): Gauge {
    return this.add(new GaugeFamily(options));
  }

  histogram(options: FamilyOptions & { readonly buckets: readonly number[] }): Histogram {
    return this.add(new HistogramFamily(options));
  }

  /** Runs before each exposition. */
  collect(collector: Collector): void {
    this.collectors.push(collector);
  }

  /** Runs the collectors (a failing one is reported to `onError`), then writes every family. */
  async expose(onError: (error: unknown) => void = () => undefined): Promise<string> {
    for (const result of await Promise.allSettled(this.collectors.map((c) => c()))) {
      if (result.status === 'rejected') onError(result.reason);
    }
    return this.text();
  }

  /** The name of every family registered, whether or not it has a series yet (a counter of errors has none until the first). */
  familyNames(): string[] {
    return [...this.families.keys()].sort();
  }

  /** Every family in the text format, without running the collectors. */
  text(): string {
    const names = [...this.families.keys()].sort();
    return names
      .flatMap((name) => this.families.get(name)?.render() ?? [])
      .map((line) => `${line}\n`)
      .join('');
  }

  private add<F extends AnyFamily>(family: F): F {
    const { name } = family.options;
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new TypeError(`bad metric name "${name}"`);
    if (this.families.has(name)) throw new TypeError(`metric ${name} registered twice`);
    this.families.set(name, family);
    return family;
  }
}
