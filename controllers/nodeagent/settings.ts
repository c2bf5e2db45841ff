/**
 * NodeAgent `spec` → the agent's live settings, as a pure function. The API server validates the
 * spec against the CRD's schema first; this parser checks the same bounds again because the object
 * may come from an older or hand-installed CRD, and a bad value must never crash the agent: a field
 * that fails is replaced by its default and reported (SettingsApplied=False, reason InvalidSettings).
 *
 * An unset field means the agent's default: the value of the agent's command-line flag (concurrency,
 * resync period, max pods, log level, cluster DNS and domain, GC, log rotation, eviction), so deleting a field
 * (or the whole object) returns to what the agent was started with.
 */
import { clusterDnsProblem, clusterDomainProblem } from '../../reconcilers/dns/cluster-settings.js';
import { DEFAULT_EVICTION, isInvalidThresholdError, parseThresholds, type EvictionConfig } from '../eviction/thresholds.js';

/** Log levels the spec may name (pino's; the flags also accept `fatal` and `silent`). */
export const SPEC_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof SPEC_LOG_LEVELS)[number] | 'fatal' | 'silent';

/** Garbage-collection policy (`controllers/gc/`), the kubelet's GC settings under nodelet's names. */
export interface GcSettings {
  /** Exited instances kept per pod and container name (kubelet `MaxPerPodContainer`); nodelet always keeps the newest. */
  readonly maxDeadContainersPerPod: number;
  /** Exited containers younger than this are never removed (kubelet `MinAge`). */
  readonly minContainerAgeSeconds: number;
  /** Image filesystem usage at which unused images are removed; 100 disables image GC. */
  readonly imageHighThresholdPercent: number;
  /** Usage image GC frees down to. */
  readonly imageLowThresholdPercent: number;
  /** Images first seen less than this ago are never removed (kubelet `ImageMinimumGCAge`). */
  readonly imageMinimumGCAgeSeconds: number;
}

/** Container log rotation (`controllers/logs/`), the kubelet's settings of the same names. */
export interface LogRotationSettings {
  /** A quantity such as `10Mi`: a container log at or above it is rotated. */
  readonly containerLogMaxSize: string;
  /** Log files kept per container, the current one included. */
  readonly containerLogMaxFiles: number;
}

/** Every setting the NodeAgent spec controls, resolved. */
export interface LiveSettings {
  readonly workerConcurrency: number;
  readonly resyncPeriodSeconds: number;
  readonly maxPods: number;
  readonly paused: boolean;
  readonly logLevel: LogLevel;
  /** Cluster DNS server IPs for ClusterFirst pods (empty: they fall back to Default). */
  readonly clusterDNS: readonly string[];
  /** The cluster's DNS domain (empty: no cluster search domains). */
  readonly clusterDomain: string;
  readonly gc: GcSettings;
  readonly logRotation: LogRotationSettings;
  /** Eviction under node pressure (`controllers/eviction/`), the kubelet's settings of the same names. */
  readonly eviction: EvictionConfig;
}

/** What an unset field means: the agent's flag values. */
export interface BaseSettings {
  readonly workerConcurrency: number;
  readonly resyncPeriodSeconds: number;
  readonly maxPods: number;
  readonly logLevel: LogLevel;
  /** `--cluster-dns`; none when absent. */
  readonly clusterDNS?: readonly string[];
  /** `--cluster-domain`; {@link DEFAULT_CLUSTER_DOMAIN} when absent. */
  readonly clusterDomain?: string;
  /** The GC flags; {@link DEFAULT_GC} when absent. */
  readonly gc?: GcSettings;
  /** `--container-log-max-size`/`--container-log-max-files`; {@link DEFAULT_LOG_ROTATION} when absent. */
  readonly logRotation?: LogRotationSettings;
  /** The `--eviction-*` flags; {@link DEFAULT_EVICTION} when absent. */
  readonly eviction?: EvictionConfig;
}

/** The `--cluster-domain` flag's default. */
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** A field whose value was refused; its default was used instead. */
export interface SettingProblem {
  /** e.g. `spec.gc.imageLowThresholdPercent`. */
  readonly field: string;
  readonly message: string;
}

/** The outcome of {@link resolveSettings}. */
export interface SettingsResolution {
  readonly settings: LiveSettings;
  readonly invalid: readonly SettingProblem[];
}

/** The kubelet's defaults (the flags' defaults): GC and log rotation. */
export const DEFAULT_GC: GcSettings = {
  maxDeadContainersPerPod: 1,
  minContainerAgeSeconds: 0,
  imageHighThresholdPercent: 85,
  imageLowThresholdPercent: 80,
  imageMinimumGCAgeSeconds: 120,
};
export const DEFAULT_LOG_ROTATION: LogRotationSettings = { containerLogMaxSize: '10Mi', containerLogMaxFiles: 5 };

/** Bounds of the integer fields, as in the CRD schema. */
interface IntBounds {
  readonly min: number;
  readonly max: number;
}

const BOUNDS = {
  workerConcurrency: { min: 1, max: 64 },
  resyncPeriodSeconds: { min: 5, max: 3600 },
  maxPods: { min: 1, max: 1000 },
  maxDeadContainersPerPod: { min: 0, max: 100 },
  minContainerAgeSeconds: { min: 0, max: 86400 },
  imageHighThresholdPercent: { min: 0, max: 100 },
  imageLowThresholdPercent: { min: 0, max: 100 },
  imageMinimumGCAgeSeconds: { min: 0, max: 86400 },
  containerLogMaxFiles: { min: 2, max: 20 },
  pressureTransitionPeriodSeconds: { min: 0, max: 86400 },
  maxPodGracePeriodSeconds: { min: 0, max: 86400 },
} as const satisfies Record<string, IntBounds>;

const LOG_SIZE = /^([1-9][0-9]*)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads fields of one object of the spec, collecting problems; every reader returns the fallback on a bad value. */
class FieldReader {
  constructor(
    private readonly object: Record<string, unknown>,
    private readonly prefix: string,
    private readonly problems: SettingProblem[],
  ) {}

  int(key: keyof typeof BOUNDS, fallback: number): number {
    const value = this.object[key];
    if (value === undefined) return fallback;
    const { min, max } = BOUNDS[key];
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

  /** A map of strings (`{"memory.available": "100Mi"}`); anything else is refused. */
  stringMap(key: string, fallback: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (isRecord(value) && Object.values(value).every((v) => typeof v === 'string')) return value as Record<string, string>;
    return this.refuse(key, `must be a map of signal names to strings, got ${JSON.stringify(value)}`, fallback);
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

/** `spec.gc`, each unset field the flag's value; a low threshold not below the high one falls back to both flags. */
function readGc(reader: FieldReader, base: GcSettings): GcSettings {
  const gc: GcSettings = {
    maxDeadContainersPerPod: reader.int('maxDeadContainersPerPod', base.maxDeadContainersPerPod),
    minContainerAgeSeconds: reader.int('minContainerAgeSeconds', base.minContainerAgeSeconds),
    imageHighThresholdPercent: reader.int('imageHighThresholdPercent', base.imageHighThresholdPercent),
    imageLowThresholdPercent: reader.int('imageLowThresholdPercent', base.imageLowThresholdPercent),
    imageMinimumGCAgeSeconds: reader.int('imageMinimumGCAgeSeconds', base.imageMinimumGCAgeSeconds),
  };
  if (gc.imageLowThresholdPercent < gc.imageHighThresholdPercent) return gc;
  const message = `must be lower than imageHighThresholdPercent (${gc.imageHighThresholdPercent}), got ${gc.imageLowThresholdPercent}`;
  return reader.refuse('imageLowThresholdPercent', message, {
    ...gc,
    imageHighThresholdPercent: base.imageHighThresholdPercent,
    imageLowThresholdPercent: base.imageLowThresholdPercent,
  });
}

/**
 * `spec.eviction`, each unset field the flag's value (a map given replaces the flag's map whole);
 * thresholds that do not parse together (an unknown signal, a soft threshold without a grace
 * period) fall back to the flags' eviction settings and are reported.
 */
function readEviction(reader: FieldReader, base: EvictionConfig): EvictionConfig {
  const eviction: EvictionConfig = {
    hard: reader.stringMap('hard', base.hard),
    soft: reader.stringMap('soft', base.soft),
    softGracePeriod: reader.stringMap('softGracePeriod', base.softGracePeriod),
    minimumReclaim: reader.stringMap('minimumReclaim', base.minimumReclaim),
    pressureTransitionPeriodSeconds: reader.int('pressureTransitionPeriodSeconds', base.pressureTransitionPeriodSeconds),
    maxPodGracePeriodSeconds: reader.int('maxPodGracePeriodSeconds', base.maxPodGracePeriodSeconds),
  };
  try {
    parseThresholds(eviction);
    return eviction;
  } catch (err: unknown) {
    if (!isInvalidThresholdError(err)) throw err;
    return reader.refuse(err.field, err.detail, base);
  }
}

/** Whether a log size is a positive whole quantity the CRD allows (`10Mi`, `512Ki`, `1G`, `4096`). */
export function isLogSize(size: string): boolean {
  return LOG_SIZE.test(size);
}

/** Bytes of a log size; NaN when it is not one ({@link isLogSize}). */
export function logSizeBytes(size: string): number {
  const match = LOG_SIZE.exec(size);
  return match === null ? Number.NaN : Number(match[1]) * (SIZE_UNITS[match[2] ?? ''] ?? 1);
}

/** Resolves a NodeAgent spec (untrusted JSON; absent means empty) against the agent's flag values. */
export function resolveSettings(spec: unknown, base: BaseSettings): SettingsResolution {
  const invalid: SettingProblem[] = [];
  if (spec !== undefined && spec !== null && !isRecord(spec)) invalid.push({ field: 'spec', message: 'must be an object' });
  const reader = new FieldReader(isRecord(spec) ? spec : {}, 'spec', invalid);
  const rotation = reader.nested('logRotation');
  const baseRotation = base.logRotation ?? DEFAULT_LOG_ROTATION;
  const settings: LiveSettings = {
    workerConcurrency: reader.int('workerConcurrency', base.workerConcurrency),
    resyncPeriodSeconds: reader.int('resyncPeriodSeconds', base.resyncPeriodSeconds),
    maxPods: reader.int('maxPods', base.maxPods),
    paused: reader.bool('paused', false),
    logLevel: reader.logLevel('logLevel', base.logLevel),
    clusterDNS: reader.clusterDns('clusterDNS', base.clusterDNS ?? []),
    clusterDomain: reader.clusterDomain('clusterDomain', base.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN),
    gc: readGc(reader.nested('gc'), base.gc ?? DEFAULT_GC),
    logRotation: {
      containerLogMaxSize: rotation.logSize('containerLogMaxSize', baseRotation.containerLogMaxSize),
      containerLogMaxFiles: rotation.int('containerLogMaxFiles', baseRotation.containerLogMaxFiles),
    },
    eviction: readEviction(reader.nested('eviction'), base.eviction ?? DEFAULT_EVICTION),
  };
  return { settings, invalid };
}
