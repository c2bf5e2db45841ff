/**
 * Local storage figures of the Summary API, as the kubelet's volume stat calculator and log
 * metrics give them: each pod volume nodelet writes (emptyDir on disk or tmpfs, configMap, secret,
 * projected, downwardAPI) and each container's log files, measured as `du` does (allocated blocks
 * and inodes of everything under the directory, links not followed), with the capacity and free
 * space of the filesystem holding it (`statfs`).
 *
 * Walking a directory costs I/O, so a pod's volume figures are measured at most once a minute (the
 * kubelet's volumeStatsAggPeriod) and answered from that measurement in between; the walk is
 * `util/dir-usage.ts`'s, bounded in entries.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { isMissing, measureDir, type DirUsage } from '../util/dir-usage.js';
import type { FsFigures } from './stats-formulas.js';

/** Volume kinds whose directories nodelet writes under `<root>/pods/<uid>/volumes/kubernetes.io~<kind>/`. */
const MEASURED_PLUGINS = ['empty-dir', 'configmap', 'secret', 'projected', 'downward-api'] as const;

/** How often a pod's volumes are walked again (the kubelet's default volumeStatsAggPeriod). */
export const VOLUME_STATS_PERIOD_MS = 60_000;

/** One measured volume of a pod. */
export interface VolumeUsage extends DirUsage {
  readonly name: string;
  readonly fs: FsFigures;
}

/** How a directory's usage is measured (`measureDir`, or a timed one). */
export type DirMeasure = (dir: string) => Promise<DirUsage>;

/** The volumes of a pod nodelet wrote, each measured, with the statfs of its filesystem. */
export async function measurePodVolumes(rootDir: string, podUid: string, readFs: (dir: string) => Promise<FsFigures>, measure: DirMeasure = measureDir): Promise<VolumeUsage[]> {
  const volumes: VolumeUsage[] = [];
  for (const plugin of MEASURED_PLUGINS) {
    const pluginDir = path.join(rootDir, 'pods', podUid, 'volumes', `kubernetes.io~${plugin}`);
    let names: string[];
    try {
      names = await readdir(pluginDir);
    } catch (error: unknown) {
      if (isMissing(error)) continue;
      throw error;
    }
    for (const name of names.sort()) {
      const dir = path.join(pluginDir, name);
      const [usage, fs] = await Promise.all([measure(dir), readFs(dir)]);
      volumes.push({ name, ...usage, fs });
    }
  }
  return volumes.sort((a, b) => a.name.localeCompare(b.name));
}

interface CachedVolumes {
  readonly atMs: number;
  readonly volumes: readonly VolumeUsage[];
}

/** Pod volume figures measured at most once per period per pod; pods not asked for again are dropped. */
export class PodVolumeStats {
  private readonly cache = new Map<string, CachedVolumes>();

  constructor(
    private readonly rootDir: string,
    private readonly readFs: (dir: string) => Promise<FsFigures>,
    private readonly periodMs = VOLUME_STATS_PERIOD_MS,
    private readonly measure: DirMeasure = measureDir,
  ) {}

  /** The figures of `podUid`'s volumes as of at most one period before `nowMs`. */
  async of(podUid: string, nowMs: number): Promise<readonly VolumeUsage[]> {
    const cached = this.cache.get(podUid);
    if (cached !== undefined && nowMs - cached.atMs < this.periodMs) return cached.volumes;
    const volumes = await measurePodVolumes(this.rootDir, podUid, this.readFs, this.measure);
    this.cache.set(podUid, { atMs: nowMs, volumes });
    return volumes;
  }

  /** Drops the figures of pods that are gone. */
  keepOnly(live: ReadonlySet<string>): void {
    for (const uid of this.cache.keys()) if (!live.has(uid)) this.cache.delete(uid);
  }
}
