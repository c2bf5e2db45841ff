/**
 * Where each live setting of the NodeAgent lands in the running agent. Kept apart from the agent's
 * wiring so that "does a change of X reach the part that uses X" is tested in one place.
 */
import type { Logger } from 'pino';
import type { ClusterDnsSettings } from '../../reconcilers/dns/pod-dns.js';
import type { SettingsTargets } from './apply.js';
import type { EvictionConfig } from '../eviction/thresholds.js';
import type { CrashLoopBackOffSettings, GcSettings, ImagePullSettings, LogRotationSettings, ReservedResources } from './settings.js';

/** The agent's parts that take live settings (narrow, so tests pass plain objects). */
export interface LiveParts {
  readonly queue: { setConcurrency(n: number): void };
  readonly resync: { setPeriodMs(ms: number): void };
  readonly node: {
    setMaxPods(n: number): void;
    /** Resources held back from pods; the Node's allocatable changes with them. */
    setReserved(reserved: { readonly systemReserved: ReservedResources; readonly kubeReserved: ReservedResources }): void;
  };
  readonly pause: { setPaused(paused: boolean): void };
  /**
   * The root logger. pino children created without a level of their own read the root's level
   * through their prototype, so setting it here reaches every component's child logger.
   */
  readonly logger: Logger;
  /** Pod name resolution (the per-pod machinery's DNS configurer). */
  readonly dns: { clusterSettings(): ClusterDnsSettings; setClusterSettings(settings: ClusterDnsSettings): void };
  /** The garbage collector. */
  readonly gc: { setSettings(gc: GcSettings): void };
  /** The container log rotation manager. */
  readonly logRotation: { setSettings(logRotation: LogRotationSettings): void };
  /** The container restart backoff. */
  readonly crashLoopBackOff: { setSettings(crashLoopBackOff: CrashLoopBackOffSettings): void };
  /** The image puller's node-wide limits. */
  readonly imagePulls: { setSettings(imagePulls: ImagePullSettings): void };
  /** The eviction manager. */
  readonly eviction: { setSettings(eviction: EvictionConfig): void };
}

/** Maps each setting to its part. */
export function createSettingsTargets(parts: LiveParts): SettingsTargets {
  return {
    setWorkerConcurrency: (n) => {
      parts.queue.setConcurrency(n);
    },
    setResyncPeriodSeconds: (seconds) => {
      parts.resync.setPeriodMs(seconds * 1000);
    },
    setMaxPods: (n) => {
      parts.node.setMaxPods(n);
    },
    setPaused: (paused) => {
      parts.pause.setPaused(paused);
    },
    setLogLevel: (level) => {
      parts.logger.level = level;
    },
    setClusterDNS: (servers) => {
      parts.dns.setClusterSettings({ ...parts.dns.clusterSettings(), servers });
    },
    setClusterDomain: (domain) => {
      parts.dns.setClusterSettings({ ...parts.dns.clusterSettings(), domain });
    },
    setGc: (gc) => {
      parts.gc.setSettings(gc);
    },
    setLogRotation: (logRotation) => {
      parts.logRotation.setSettings(logRotation);
    },
    setCrashLoopBackOff: (crashLoopBackOff) => {
      parts.crashLoopBackOff.setSettings(crashLoopBackOff);
    },
    setImagePulls: (imagePulls) => {
      parts.imagePulls.setSettings(imagePulls);
    },
    setReserved: (reserved) => {
      parts.node.setReserved(reserved);
    },
    setEviction: (eviction) => {
      parts.eviction.setSettings(eviction);
    },
  };
}
