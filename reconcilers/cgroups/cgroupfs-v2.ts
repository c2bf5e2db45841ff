/**
 * cgroup v2 (the unified hierarchy) with the cgroupfs driver, as the kubelet's cgroup v2 manager
 * drives it through libcontainer's fs2 manager. A cgroup name (`/kubepods/burstable/pod<uid>`) is
 * one directory under the cgroup2 mount.
 *
 * - `create` makes each level in turn; before a level gets a child, the controllers the kubelet
 *   uses (cpu, cpuset, memory, hugetlb, pids, as far as the root offers them) are enabled in its
 *   `cgroup.subtree_control`, top down, or the child would have no control files for them.
 * - The v1-shaped settings are written in v2's files: `cpu.shares` as `cpu.weight` (libcontainer's
 *   conversion, {@link cpuSharesToWeight}), the CFS quota and period as `cpu.max`
 *   (`<quota|max> <period>`), the memory limit as `memory.max`, the pids limit as `pids.max`.
 * - `read` answers in v1 units again, so the resize logic compares like with like.
 *
 * No process ever joins a cgroup this makes: pods' processes live in the container cgroups the
 * runtime makes below them, which v2's "no internal processes" rule requires anyway.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { settleSync } from '../../util/sync-call.js';
import type { CgroupFs } from './cgroupfs.js';
import { isNotFound, isPresent, pidsUnder, removeTree, subdirs } from './cgroup-dirs.js';
import { MAX_SHARES, MIN_SHARES, type CgroupResources } from './pod-cgroup-config.js';

/** The controllers the kubelet's v2 manager needs (getSupportedUnifiedControllers). */
export const KUBELET_V2_CONTROLLERS: readonly string[] = ['cpu', 'cpuset', 'memory', 'hugetlb', 'pids'];

/** `memory.limit_in_bytes` of an unlimited v1 cgroup (the largest page-aligned int64): what `read` answers for `max`. */
export const UNLIMITED_MEMORY_BYTES = 9_223_372_036_854_771_712;

const MAX_WEIGHT = 10_000;

/**
 * libcontainer's `ConvertCPUSharesToCgroupV2Value` (opencontainers/cgroups v0.0.6, the kubelet's):
 * a quadratic in log2(shares) through (2 → 1), (1024 → 100), (262144 → 10000); 0 stays unset.
 */
export function cpuSharesToWeight(shares: number): number {
  if (shares <= 0) return 0;
  if (shares <= MIN_SHARES) return 1;
  if (shares >= MAX_SHARES) return MAX_WEIGHT;
  const l = Math.log2(shares);
  return Math.ceil(10 ** ((l * l + 125 * l) / 612 - 7 / 34));
}

/**
 * The smallest `cpu.shares` that {@link cpuSharesToWeight} turns into `weight`: the conversion is
 * monotonic, so shares that map to the same weight differ by nothing the kernel sees.
 */
export function cpuWeightToShares(weight: number): number {
  let low = MIN_SHARES;
  let high = MAX_SHARES;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (cpuSharesToWeight(mid) >= weight) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** The value of `cpu.max` for a quota (-1 or less: `max`) and period. */
function cpuMax(quotaUs: number, periodUs: number | undefined): string {
  const quota = quotaUs < 0 ? 'max' : String(quotaUs);
  // The kernel keeps the period when only the quota is written.
  return periodUs === undefined ? quota : `${quota} ${periodUs}`;
}

/** cgroup v2 under its mount point. */
export class V2CgroupFs implements CgroupFs {
  /**
   * @param mountpoint the cgroup2 mount (`/sys/fs/cgroup`).
   * @param controllers the controllers to enable below the root: the kubelet's, as far as the root's
   *   `cgroup.controllers` offers them ({@link hostV2Controllers}).
   */
  constructor(
    private readonly mountpoint: string,
    private readonly controllers: readonly string[],
  ) {}

  private dir(name: string): string {
    return path.join(this.mountpoint, name);
  }

  create(name: string, resources: CgroupResources): Promise<void> {
    return settleSync(() => {
      let dir = this.mountpoint;
      for (const part of name.split('/').filter((p) => p !== '')) {
        this.enableControllers(dir);
        dir = path.join(dir, part);
        mkdirSync(dir, { recursive: true });
      }
      this.write(name, resources);
    });
  }

  /** Adds the controllers missing from `dir`'s `cgroup.subtree_control`, in one write. */
  private enableControllers(dir: string): void {
    const file = path.join(dir, 'cgroup.subtree_control');
    // The kernel lists names; a laid-out test tree holds what was written (`+cpu`).
    let enabled: string[] = [];
    try {
      enabled = readFileSync(file, 'utf8').split(/\s+/).filter((c) => c !== '').map((c) => c.replace(/^\+/, ''));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const missing = this.controllers.filter((c) => !enabled.includes(c));
    if (missing.length > 0) writeFileSync(file, missing.map((c) => `+${c}`).join(' '));
  }

  update(name: string, resources: CgroupResources): Promise<void> {
    return settleSync(() => {
      this.write(name, resources);
    });
  }

  private write(name: string, r: CgroupResources): void {
    const dir = this.dir(name);
    const put = (file: string, value: string): void => {
      writeFileSync(path.join(dir, file), value);
    };
    if (r.cpuShares !== undefined && this.controllers.includes('cpu')) put('cpu.weight', String(cpuSharesToWeight(r.cpuShares)));
    if ((r.cpuQuotaUs !== undefined || r.cpuPeriodUs !== undefined) && this.controllers.includes('cpu')) {
      const quota = r.cpuQuotaUs ?? this.readCpuMax(dir).quotaUs;
      put('cpu.max', cpuMax(quota, r.cpuPeriodUs));
    }
    if (r.memoryLimitBytes !== undefined && this.controllers.includes('memory')) put('memory.max', r.memoryLimitBytes < 0 ? 'max' : String(r.memoryLimitBytes));
    if (r.pidsLimit !== undefined && this.controllers.includes('pids')) put('pids.max', r.pidsLimit <= 0 ? 'max' : String(r.pidsLimit));
  }

  /** `cpu.max` as a quota (-1: `max`) and period. */
  private readCpuMax(dir: string): { quotaUs: number; periodUs: number } {
    const [quota = 'max', period = ''] = readFileSync(path.join(dir, 'cpu.max'), 'utf8').trim().split(/\s+/);
    return { quotaUs: quota === 'max' ? -1 : Number(quota), periodUs: Number(period) };
  }

  read(name: string): Promise<CgroupResources> {
    return settleSync(() => {
      const dir = this.dir(name);
      const found: Record<string, number> = {};
      if (this.controllers.includes('cpu')) {
        found.cpuShares = cpuWeightToShares(Number(readFileSync(path.join(dir, 'cpu.weight'), 'utf8').trim()));
        const { quotaUs, periodUs } = this.readCpuMax(dir);
        found.cpuQuotaUs = quotaUs;
        found.cpuPeriodUs = periodUs;
      }
      if (this.controllers.includes('memory')) {
        const max = readFileSync(path.join(dir, 'memory.max'), 'utf8').trim();
        found.memoryLimitBytes = max === 'max' ? UNLIMITED_MEMORY_BYTES : Number(max);
      }
      return found;
    });
  }

  exists(name: string): Promise<boolean> {
    return settleSync(() => isPresent(this.dir(name)));
  }

  existsAnywhere(name: string): Promise<boolean> {
    return this.exists(name);
  }

  children(name: string): Promise<string[]> {
    return settleSync(() => subdirs(this.dir(name)).sort());
  }

  pids(name: string): Promise<number[]> {
    return settleSync(() => pidsUnder(this.dir(name)));
  }

  destroy(name: string): Promise<void> {
    return settleSync(() => {
      removeTree(this.dir(name));
    });
  }
}

/** The kubelet's controllers that the root of a cgroup2 mount offers (its `cgroup.controllers`). */
export function hostV2Controllers(mountpoint: string): string[] {
  const offered = readFileSync(path.join(mountpoint, 'cgroup.controllers'), 'utf8').split(/\s+/);
  return KUBELET_V2_CONTROLLERS.filter((c) => offered.includes(c));
}
