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
import { DEFAULT_EVICTION, isInvalidThresholdError, parseThresholds, type EvictionConfig } from '../eviction/thresholds.js';
import { isRecord } from '../../util/is-record.js';
import { FieldReader, LOG_SIZE, SIZE_UNITS, type LogLevel, type SettingProblem } from './field-reader.js';

import {
  DEFAULT_CRASH_LOOP_BACK_OFF,
  DEFAULT_IMAGE_PULLS,
  readCrashLoopBackOff,
  readImagePulls,
  readReserved,
  type CrashLoopBackOffSettings,
  type ImagePullSettings,
  type ReservedResources,
} from './node-policy-settings.js';

export { SPEC_LOG_LEVELS, type LogLevel, type SettingProblem } from './field-reader.js';
export type { CrashLoopBackOffSettings, ImagePullSettings, ReservedResources } from './node-policy-settings.js';

/** Garbage-collection policy (`controllers/gc/`), the kubelet's GC settings under nodelet's names. */
export interface GcSettings {
  /** Exited instances kept per pod and container name (kubelet `MaxPerPodContainer`); nodelet always keeps the newest. */
  readonly maxDeadContainersPerPod: number;
  /** Exited instances kept across the node (kubelet `MaxContainers`, `--maximum-dead-containers`); -1: no limit. Nodelet always keeps the newest of each pod container. */
  readonly maxDeadContainers: number;
  /** Exited containers younger than this are never removed (kubelet `MinAge`). */
  readonly minContainerAgeSeconds: number;
  /** Image filesystem usage at which unused images are removed; 100 disables removal for disk usage (not for age). */
  readonly imageHighThresholdPercent: number;
  /** Usage image GC frees down to. */
  readonly imageLowThresholdPercent: number;
  /** Images first seen less than this ago are never removed for disk usage (kubelet `ImageMinimumGCAge`). */
  readonly imageMinimumGCAgeSeconds: number;
  /** Unused images not seen in use for longer than this are removed whatever the disk usage (kubelet `ImageMaximumGCAge`); 0: never. */
  readonly imageMaximumGCAgeSeconds: number;
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
  readonly crashLoopBackOff: CrashLoopBackOffSettings;
  readonly imagePulls: ImagePullSettings;
  /** Held back from pods for the OS (`--system-reserved`). */
  readonly systemReserved: ReservedResources;
  /** Held back from pods for the agent and runtime (`--kube-reserved`). */
  readonly kubeReserved: ReservedResources;
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
  /** The kubelet's default (5 min) when absent. */
  readonly crashLoopBackOff?: CrashLoopBackOffSettings;
  /** `--serialize-image-pulls`, `--max-parallel-image-pulls`, `--registry-qps`, `--registry-burst`; the kubelet's defaults when absent. */
  readonly imagePulls?: ImagePullSettings;
  /** `--system-reserved`/`--kube-reserved`; nothing reserved when absent. */
  readonly systemReserved?: ReservedResources;
  readonly kubeReserved?: ReservedResources;
  /** The `--eviction-*` flags; {@link DEFAULT_EVICTION} when absent. */
  readonly eviction?: EvictionConfig;
}

/** The `--cluster-domain` flag's default. */
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** The outcome of {@link resolveSettings}. */
export interface SettingsResolution {
  readonly settings: LiveSettings;
  readonly invalid: readonly SettingProblem[];
}

/** The kubelet's defaults (the flags' defaults): GC and log rotation. */
export const DEFAULT_GC: GcSettings = {
  maxDeadContainersPerPod: 1,
  maxDeadContainers: -1,
  minContainerAgeSeconds: 0,
  imageHighThresholdPercent: 85,
  imageLowThresholdPercent: 80,
  imageMinimumGCAgeSeconds: 120,
  imageMaximumGCAgeSeconds: 0,
};
export const DEFAULT_LOG_ROTATION: LogRotationSettings = { containerLogMaxSize: '10Mi', containerLogMaxFiles: 5 };

/**
 * `spec.gc`, each unset field the flag's value. Pairs the kubelet refuses fall back to both flags: a
 * low threshold not below the high one, and a maximum image age (when set) not above the minimum.
 */
function readGc(reader: FieldReader, base: GcSettings): GcSettings {
  let gc: GcSettings = {
    maxDeadContainersPerPod: reader.int('maxDeadContainersPerPod', base.maxDeadContainersPerPod),
    maxDeadContainers: reader.int('maxDeadContainers', base.maxDeadContainers),
    minContainerAgeSeconds: reader.int('minContainerAgeSeconds', base.minContainerAgeSeconds),
    imageHighThresholdPercent: reader.int('imageHighThresholdPercent', base.imageHighThresholdPercent),
    imageLowThresholdPercent: reader.int('imageLowThresholdPercent', base.imageLowThresholdPercent),
    imageMinimumGCAgeSeconds: reader.int('imageMinimumGCAgeSeconds', base.imageMinimumGCAgeSeconds),
    imageMaximumGCAgeSeconds: reader.int('imageMaximumGCAgeSeconds', base.imageMaximumGCAgeSeconds),
  };
  if (gc.imageLowThresholdPercent >= gc.imageHighThresholdPercent) {
    const message = `must be lower than imageHighThresholdPercent (${gc.imageHighThresholdPercent}), got ${gc.imageLowThresholdPercent}`;
    gc = reader.refuse('imageLowThresholdPercent', message, { ...gc, imageHighThresholdPercent: base.imageHighThresholdPercent, imageLowThresholdPercent: base.imageLowThresholdPercent });
  }
  if (gc.imageMaximumGCAgeSeconds > 0 && gc.imageMaximumGCAgeSeconds <= gc.imageMinimumGCAgeSeconds) {
    const message = `must be 0 or greater than imageMinimumGCAgeSeconds (${gc.imageMinimumGCAgeSeconds}), got ${gc.imageMaximumGCAgeSeconds}`;
    gc = reader.refuse('imageMaximumGCAgeSeconds', message, { ...gc, imageMinimumGCAgeSeconds: base.imageMinimumGCAgeSeconds, imageMaximumGCAgeSeconds: base.imageMaximumGCAgeSeconds });
  }
  return gc;
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
    crashLoopBackOff: readCrashLoopBackOff(reader.nested('crashLoopBackOff'), base.crashLoopBackOff ?? DEFAULT_CRASH_LOOP_BACK_OFF),
    imagePulls: readImagePulls(reader.nested('imagePulls'), base.imagePulls ?? DEFAULT_IMAGE_PULLS),
    systemReserved: readReserved(reader, 'systemReserved', base.systemReserved ?? {}),
    kubeReserved: readReserved(reader, 'kubeReserved', base.kubeReserved ?? {}),
    eviction: readEviction(reader.nested('eviction'), base.eviction ?? DEFAULT_EVICTION),
  };
  return { settings, invalid };
}
