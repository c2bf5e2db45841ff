/**
 * What each pod uses, for ranking, the eviction message and local storage limits: memory working
 * set and writable layer of each container from the runtime's `ListContainerStats`, the bytes of
 * the pod's volumes and container logs on disk (`util/dir-usage.ts`'s walk). For ranking, only
 * emptyDirs on disk count (`medium: Memory` ones are tmpfs: charged to the pod's memory cgroup).
 */
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStats } from '../../cri/types.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../../reconcilers/model/runtime-labels.js';
import { podLogDirectory } from '../../reconcilers/container/sandbox-config.js';
import { volumeDir } from '../../reconcilers/volumes/layout.js';
import { measureDir } from '../../util/dir-usage.js';
import { podKeyOf } from '../../util/pod-key.js';
import { hasLocalStorageLimits, type ContainerStorage, type LocalStorageUsage } from './local-storage.js';
import type { ContainerUsage, PodUsage } from './ranking.js';

/** Where usage is read. */
export interface PodUsageSources {
  /** The runtime's container statistics. */
  listContainerStats(): Promise<ContainerStats[]>;
  /** Bytes under a directory (0 when it does not exist); default: `du`'s figure. */
  directoryBytes?: (dir: string) => Promise<number>;
  readonly rootDir: string;
  /** Where container logs are (`<dir>/<namespace>_<name>_<uid>/<container>/`); absent: logs not counted. */
  readonly podLogDir?: string;
}

async function duBytes(dir: string): Promise<number> {
  return (await measureDir(dir)).usedBytes;
}

function containerUsage(stats: ContainerStats): ContainerUsage {
  const memory = stats.memory?.workingSetBytes;
  const disk = stats.writableLayer?.usedBytes;
  return {
    name: stats.labels[LABEL_CONTAINER_NAME] ?? stats.name,
    ...(memory === undefined ? {} : { memoryWorkingSetBytes: Number(memory) }),
    ...(disk === undefined ? {} : { diskBytes: Number(disk) }),
  };
}

/** emptyDir volumes on the node's disk (not tmpfs). */
function diskEmptyDirs(pod: V1Pod): string[] {
  return (pod.spec?.volumes ?? []).filter((v) => v.emptyDir !== undefined && v.emptyDir.medium !== 'Memory').map((v) => v.name);
}

/** Each pod's usage. */
export async function readPodUsage(sources: PodUsageSources, pods: readonly V1Pod[]): Promise<PodUsage[]> {
  const stats = await sources.listContainerStats();
  const measure = sources.directoryBytes ?? duBytes;
  return Promise.all(
    pods.map(async (pod) => {
      const uid = pod.metadata?.uid ?? '';
      const containers = stats.filter((s) => s.labels[LABEL_POD_UID] === uid).map(containerUsage);
      const sizes = await Promise.all(diskEmptyDirs(pod).map((name) => measure(volumeDir(sources.rootDir, uid, 'empty-dir', name))));
      return { pod, containers, volumeBytes: sizes.reduce((a, b) => a + b, 0) };
    }),
  );
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** One pod's local storage: every emptyDir, the local ephemeral volumes (disk emptyDirs, configMaps), each container's layer and logs. */
async function podStorage(sources: PodUsageSources, pod: V1Pod, stats: readonly ContainerStats[]): Promise<LocalStorageUsage> {
  const measure = sources.directoryBytes ?? duBytes;
  const uid = pod.metadata?.uid ?? '';
  const volumes = pod.spec?.volumes ?? [];
  const emptyDirs = volumes.filter((v) => v.emptyDir !== undefined);
  const emptyDirBytes = new Map(await Promise.all(emptyDirs.map(async (v) => [v.name, await measure(volumeDir(sources.rootDir, uid, 'empty-dir', v.name))] as const)));
  const configMaps = await Promise.all(volumes.filter((v) => v.configMap !== undefined).map((v) => measure(volumeDir(sources.rootDir, uid, 'configmap', v.name))));
  const logDir = sources.podLogDir === undefined ? undefined : podLogDirectory(podKeyOf(pod), sources.podLogDir);
  const containers: ContainerStorage[] = await Promise.all(
    stats
      .filter((s) => s.labels[LABEL_POD_UID] === uid)
      .map(async (s) => {
        const name = s.labels[LABEL_CONTAINER_NAME] ?? s.name;
        const rootfs = s.writableLayer?.usedBytes;
        return { name, ...(rootfs === undefined ? {} : { rootfsBytes: Number(rootfs) }), ...(logDir === undefined ? {} : { logsBytes: await measure(path.join(logDir, name)) }) };
      }),
  );
  const diskVolumes = sum(diskEmptyDirs(pod).map((name) => emptyDirBytes.get(name) ?? 0)) + sum(configMaps);
  const podBytes = sum(containers.map((c) => (c.rootfsBytes ?? 0) + (c.logsBytes ?? 0))) + diskVolumes;
  return { pod, emptyDirBytes, containers, podBytes };
}

/**
 * The local storage of the pods that limit it (an emptyDir `sizeLimit`, an `ephemeral-storage`
 * limit): the others cannot exceed a limit, so their directories are not walked.
 */
export async function readLocalStorageUsage(sources: PodUsageSources, pods: readonly V1Pod[]): Promise<LocalStorageUsage[]> {
  const limited = pods.filter(hasLocalStorageLimits);
  if (limited.length === 0) return [];
  const stats = await sources.listContainerStats();
  return Promise.all(limited.map((pod) => podStorage(sources, pod, stats)));
}
