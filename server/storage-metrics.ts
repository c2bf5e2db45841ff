/**
 * The kubelet's storage and cgroup timing families on `/metrics` (v1.37.2):
 *
 * - `kubelet_volume_metric_collection_duration_seconds` (`metric_source`): each directory walk
 *   that measures a volume's or a container log's usage (pkg/volume/util/fs.DiskUsage observes it
 *   as `du`, or `fsquota` where project quotas answer; nodelet always walks: `du`).
 * - `kubelet_container_log_filesystem_used_bytes` (`uid`, `namespace`, `pod`, `container`): each
 *   running container's log usage, measured at the scrape as the kubelet's log metrics collector
 *   reads its stats provider.
 * - `kubelet_cgroup_manager_duration_seconds` (`operation_type`: `create`, `update`, `destroy`):
 *   the pod cgroup manager's writes, as the kubelet's cgroup manager times them.
 */
import type { CgroupOperation } from '../reconcilers/cgroups/timed-cgroupfs.js';
import type { Clock } from '../util/clock.js';
import type { DirUsage } from '../util/dir-usage.js';
import { DEFAULT_BUCKETS, type MetricsRegistry } from '../util/metrics.js';

const alpha = (help: string): string => `[ALPHA] ${help}`;

/** One running container's log usage. */
export interface ContainerLogUsage {
  readonly uid: string;
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  readonly usedBytes: number;
}

/** Recorders handed to the stats collector and the pod cgroup manager; none may throw. */
export interface StorageMetrics {
  /** A directory walk took `seconds` (`kubelet_volume_metric_collection_duration_seconds{metric_source="du"}`). */
  diskUsageMeasured(seconds: number): void;
  /** A cgroup manager operation took `seconds` (`kubelet_cgroup_manager_duration_seconds`). */
  cgroupOperated(operation: CgroupOperation, seconds: number): void;
  /** Reads every running container's log usage at each scrape (`kubelet_container_log_filesystem_used_bytes`). */
  watchContainerLogs(read: () => Promise<readonly ContainerLogUsage[]>): void;
}

/** Registers the families in `registry`. */
export function storageMetrics(registry: MetricsRegistry): StorageMetrics {
  const walks = registry.histogram({ name: 'kubelet_volume_metric_collection_duration_seconds', help: alpha('Duration in seconds to calculate volume stats'), labelNames: ['metric_source'], buckets: DEFAULT_BUCKETS });
  const cgroups = registry.histogram({ name: 'kubelet_cgroup_manager_duration_seconds', help: alpha('Duration in seconds for cgroup manager operations. Broken down by method.'), labelNames: ['operation_type'], buckets: DEFAULT_BUCKETS });
  const logs = registry.gauge({ name: 'kubelet_container_log_filesystem_used_bytes', help: alpha("Bytes used by the container's logs on the filesystem."), labelNames: ['uid', 'namespace', 'pod', 'container'] });
  return {
    diskUsageMeasured: (seconds) => { walks.observe({ metric_source: 'du' }, seconds); },
    cgroupOperated: (operation, seconds) => { cgroups.observe({ operation_type: operation }, seconds); },
    watchContainerLogs: (read) => {
      registry.collect(async () => {
        const usage = await read();
        // Recomputed from scratch: the series of containers that stopped go.
        logs.clear();
        for (const u of usage) logs.set({ uid: u.uid, namespace: u.namespace, pod: u.pod, container: u.container }, u.usedBytes);
      });
    },
  };
}

/** `measure`, with each walk's duration (by `clock`) handed to `observe`, failed walks included. */
export function timedDirMeasure(measure: (dir: string) => Promise<DirUsage>, clock: Clock, observe: (seconds: number) => void): (dir: string) => Promise<DirUsage> {
  return async (dir) => {
    const started = clock.now();
    try {
      return await measure(dir);
    } finally {
      observe((clock.now() - started) / 1000);
    }
  };
}
