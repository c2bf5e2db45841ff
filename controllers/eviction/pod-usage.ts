/**
 * What each pod uses, for ranking and the eviction message: memory working set and writable layer
 * of each container from the runtime's `ListContainerStats`, and the bytes of the pod's emptyDir
 * volumes on disk (`medium: Memory` ones are tmpfs: charged to the pod's memory cgroup, not disk).
 */
import type { Dirent } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStats } from '../../cri/types.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../../reconcilers/runtime-labels.js';
import { volumeDir } from '../../reconcilers/volumes/layout.js';
import type { ContainerUsage, PodUsage } from './ranking.js';

/** Where usage is read. */
export interface PodUsageSources {
  /** The runtime's container statistics. */
  listContainerStats(): Promise<ContainerStats[]>;
  /** Bytes under a directory (0 when it does not exist). */
  directoryBytes?: (dir: string) => Promise<number>;
  readonly rootDir: string;
}

async function entriesOf(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** Allocated bytes under a directory, as `du` counts them (blocks, not apparent size); never follows links. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await entriesOf(dir)) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await directoryBytes(full);
    else total += await lstat(full).then((s) => s.blocks * 512, () => 0);
  }
  return total;
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
  const measure = sources.directoryBytes ?? directoryBytes;
  return Promise.all(
    pods.map(async (pod) => {
      const uid = pod.metadata?.uid ?? '';
      const containers = stats.filter((s) => s.labels[LABEL_POD_UID] === uid).map(containerUsage);
      const sizes = await Promise.all(diskEmptyDirs(pod).map((name) => measure(volumeDir(sources.rootDir, uid, 'empty-dir', name))));
      return { pod, containers, volumeBytes: sizes.reduce((a, b) => a + b, 0) };
    }),
  );
}
