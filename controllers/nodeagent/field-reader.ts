/**
 * Reads the fields of one object of an untrusted NodeAgent spec: every reader returns the fallback
 * on a bad value and records the problem (the field's path and why), so one bad field never stops
 * the others nor the agent.
 */
import { clusterDnsProblem, clusterDomainProblem } from '../../reconcilers/dns/cluster-settings.js';
import { isRecord } from '../../util/is-record.js';

/** Log levels the spec may name (pino's; the flags also accept `fatal` and `silent`). */
export const SPEC_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof SPEC_LOG_LEVELS)[number] | 'fatal' | 'silent';

/** A field whose value was refused; its default was used instead. */
export interface SettingProblem {
  /** e.g. `spec.gc.imageLowThresholdPercent`. */
  readonly field: string;
  readonly message: string;
}

/** Bounds of the integer fields, as in the CRD schema. */
export interface IntBounds {
  readonly min: number;
  readonly max: number;
}

const BOUNDS = {
  workerConcurrency: { min: 1, max: 64 },
  resyncPeriodSeconds: { min: 5, max: 3600 },
  maxPods: { min: 1, max: 1000 },
  maxDeadContainersPerPod: { min: 0, max: 100 },
  maxDeadContainers: { min: -1, max: 2147483647 },
  minContainerAgeSeconds: { min: 0, max: 86400 },
  imageHighThresholdPercent: { min: 0, max: 100 },
  imageLowThresholdPercent: { min: 0, max: 100 },
  imageMinimumGCAgeSeconds: { min: 0, max: 86400 },
  imageMaximumGCAgeSeconds: { min: 0, max: 2147483647 },
  containerLogMaxFiles: { min: 2, max: 20 },
  pressureTransitionPeriodSeconds: { min: 0, max: 86400 },
  maxPodGracePeriodSeconds: { min: 0, max: 86400 },
} as const satisfies Record<string, IntBounds>;

export const LOG_SIZE = /^([1-9][0-9]*)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
export const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };

/** Reads fields of one object of the spec, collecting problems; every reader returns the fallback on a bad value. */
export class FieldReader {
  constructor(
    private readonly object: Record<string, unknown>,
    private readonly prefix: string,
    private readonly problems: SettingProblem[],
  ) {}

  int(key: keyof typeof BOUNDS, fallback: number): number {
    return this.intWithin(key, BOUNDS[key], fallback);
  }

  /** A whole number within bounds. */
  intWithin(key: string, bounds: IntBounds, fallback: number): number {
    const value = this.object[key];
    if (value === undefined) return fallback;
    const { min, max } = bounds;
    if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
    return this.refuse(key, `must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`, fallback);
  }

  bool(key: string, fallback: boolean): boolean {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (typeof value === 'boolean') return value;
    return this.refuse(key, `must be true or false, got ${JSON.stringify(value)}`, fallback);
  }

  logLevel(key: string, fallback: LogLevel): LogLevel {
    const value = this.object[key];
    if (value === undefined) return fallback;
    const level = SPEC_LOG_LEVELS.find((l) => l === value);
    if (level !== undefined) return level;
    return this.refuse(key, `must be one of ${SPEC_LOG_LEVELS.join(', ')}, got ${JSON.stringify(value)}`, fallback);
  }

  logSize(key: string, fallback: string): string {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (typeof value === 'string' && LOG_SIZE.test(value)) return value;
    return this.refuse(key, `must be a positive quantity such as 10Mi, got ${JSON.stringify(value)}`, fallback);
  }

  /** A list of IP addresses usable as cluster DNS servers (at most 3). */
  clusterDns(key: string, fallback: readonly string[]): readonly string[] {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) {
      return this.refuse(key, `must be a list of IP addresses, got ${JSON.stringify(value)}`, fallback);
    }
    const problem = clusterDnsProblem(value);
    return problem === undefined ? value : this.refuse(key, problem, fallback);
  }

  /** A DNS subdomain, or empty. */
  clusterDomain(key: string, fallback: string): string {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'string') return this.refuse(key, `must be a string, got ${JSON.stringify(value)}`, fallback);
    const problem = clusterDomainProblem(value);
    return problem === undefined ? value : this.refuse(key, problem, fallback);
  }

  /** A number (not only whole) within bounds. */
  number(key: string, bounds: IntBounds, fallback: number): number {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (typeof value === 'number' && Number.isFinite(value) && value >= bounds.min && value <= bounds.max) return value;
    return this.refuse(key, `must be a number from ${bounds.min} to ${bounds.max}, got ${JSON.stringify(value)}`, fallback);
  }

  /** A Go duration string (`90s`, `1m30s`) within bounds, as milliseconds. */
  durationMs(key: string, bounds: IntBounds, fallback: number): number {
    const value = this.object[key];
    if (value === undefined) return fallback;
    const ms = typeof value === 'string' ? goDurationMs(value) : Number.NaN;
    if (ms >= bounds.min && ms <= bounds.max) return ms;
    return this.refuse(key, `must be a duration from ${bounds.min / 1000}s to ${bounds.max / 1000}s such as 90s or 1m30s, got ${JSON.stringify(value)}`, fallback);
  }

  /** A map of strings (`{"memory.available": "100Mi"}`); anything else is refused. */
  stringMap(key: string, fallback: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (isRecord(value) && Object.values(value).every((v) => typeof v === 'string')) return value as Record<string, string>;
    return this.refuse(key, `must be a map of signal names to strings, got ${JSON.stringify(value)}`, fallback);
  }

  /** The raw value of a field, for readers of shapes this class does not know. */
  raw(key: string): unknown {
    return this.object[key];
  }

  /** A nested object; a present non-object is refused and read as empty. */
  nested(key: string): FieldReader {
    const value = this.object[key];
    if (value !== undefined && !isRecord(value)) this.refuse(key, 'must be an object', undefined);
    return new FieldReader(isRecord(value) ? value : {}, `${this.prefix}.${key}`, this.problems);
  }

  /** Records a problem with a field of this object. */
  refuse<T>(key: string, message: string, fallback: T): T {
    this.problems.push({ field: `${this.prefix}.${key}`, message });
    return fallback;
  }
}

/** One unit of a Go duration (`1h2m3.5s`, `500ms`), in milliseconds. */
const DURATION_UNITS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, µs: 1e-3, ns: 1e-6 };
const DURATION = /^(?:(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns))+$/;
const DURATION_PART = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g;

/** Milliseconds of a Go duration string (`90s`, `1m30s`, `0.5s`); NaN when it is not one. */
export function goDurationMs(text: string): number {
  if (!DURATION.test(text)) return Number.NaN;
  let ms = 0;
  for (const match of text.matchAll(DURATION_PART)) ms += Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? Number.NaN);
  return ms;
}
