/**
 * The cgroup filesystem behind a narrow interface: cgroup v1 with the cgroupfs driver, as the
 * kubelet's libcontainer manager drives it. A cgroup name (`/kubepods/burstable/pod<uid>`) is one
 * directory in every v1 hierarchy mounted on the host (cpu, cpuacct, cpuset, memory, devices,
 * freezer, blkio, pids, name=systemd, …); the cgroup2 mount of a hybrid host is not used, as runc's
 * v1 manager does not use it.
 *
 * - `create` makes the directory in every hierarchy (parents first; a new cpuset cgroup gets its
 *   parent's cpus and mems, or no task could join it) and writes the settings; it is idempotent.
 * - `destroy` removes the directory in every hierarchy, deepest first (containerd's container
 *   cgroups under a pod cgroup are empty once their tasks are deleted); a missing one is fine.
 * - Errors of the filesystem are thrown as they are (EBUSY: processes or children remain).
 *
 * Every call is synchronous underneath: cgroupfs lives in kernel memory, so no call waits on a
 * disk, and a promise-based call costs the agent several round trips through the thread pool per
 * file (open, stat, read, close) where the synchronous one is a few system calls.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { CgroupResources } from './pod-cgroup-config.js';
import { parseMountInfo, type MountEntry } from '../../util/mountinfo.js';
import { settleSync } from '../../util/sync-call.js';
import { isPresent, pidsUnder, removeTree, subdirs } from './cgroup-dirs.js';

/** One mounted v1 hierarchy. */
export interface CgroupHierarchy {
  /** Its controllers (`cpu`, `memory`, `name=systemd`). */
  readonly subsystems: readonly string[];
  readonly mountpoint: string;
}

/** What the pod cgroup manager does with cgroups. Names are absolute (`/kubepods/besteffort`). */
export interface CgroupFs {
  /** Creates the cgroup (and its parents) in every hierarchy and applies the settings. Idempotent. */
  create(name: string, resources: CgroupResources): Promise<void>;
  /** Applies settings to an existing cgroup. */
  update(name: string, resources: CgroupResources): Promise<void>;
  /** The CPU and memory settings the kernel holds for an existing cgroup (`pids.max` left out). */
  read(name: string): Promise<CgroupResources>;
  /** Whether the cgroup exists in every hierarchy. */
  exists(name: string): Promise<boolean>;
  /** Whether the cgroup exists in any hierarchy (a half-removed one still has something to remove). */
  existsAnywhere(name: string): Promise<boolean>;
  /** Names of the direct child cgroups, in any hierarchy. */
  children(name: string): Promise<string[]>;
  /** Every process in the cgroup or its descendants, in any hierarchy. */
  pids(name: string): Promise<number[]>;
  /** Removes the cgroup and its (empty) descendants from every hierarchy; absent ones are skipped. */
  destroy(name: string): Promise<void>;
}

/** The v1 hierarchies of a mount table: filesystem type `cgroup`. */
export function parseCgroupMounts(mountinfo: string): CgroupHierarchy[] {
  return cgroupHierarchiesOf(parseMountInfo(mountinfo));
}

/** The v1 hierarchies among mount entries. */
export function cgroupHierarchiesOf(entries: readonly MountEntry[]): CgroupHierarchy[] {
  const found: CgroupHierarchy[] = [];
  for (const { mountPoint: mountpoint, fsType, superOptions } of entries) {
    if (fsType !== 'cgroup') continue;
    const subsystems = superOptions.split(',').filter((o) => o !== 'rw' && o !== 'ro' && !o.startsWith('release_agent=') && o !== 'clone_children' && o !== 'noprefix' && o !== 'xattr');
    // A hierarchy mounted twice (say in a container) counts once, at its first mountpoint.
    if (found.some((h) => h.subsystems.join(',') === subsystems.join(','))) continue;
    found.push({ subsystems, mountpoint });
  }
  return found;
}

/** The host's v1 hierarchies. */
export async function hostCgroupHierarchies(mountinfoPath = '/proc/self/mountinfo'): Promise<CgroupHierarchy[]> {
  return parseCgroupMounts(await readFile(mountinfoPath, 'utf8'));
}

/** The files each setting is written to, in order (the period before the quota, as runc writes them). */
function settingFiles(r: CgroupResources): { subsystem: string; file: string; value: number }[] {
  const files: { subsystem: string; file: string; value: number | undefined }[] = [
    { subsystem: 'cpu', file: 'cpu.shares', value: r.cpuShares },
    { subsystem: 'cpu', file: 'cpu.cfs_period_us', value: r.cpuPeriodUs },
    { subsystem: 'cpu', file: 'cpu.cfs_quota_us', value: r.cpuQuotaUs },
    { subsystem: 'memory', file: 'memory.limit_in_bytes', value: r.memoryLimitBytes },
    { subsystem: 'pids', file: 'pids.max', value: r.pidsLimit },
  ];
  return files.flatMap((f) => (f.value === undefined ? [] : [{ ...f, value: f.value }]));
}

/** cgroup v1 over the mounted hierarchies. */
export class V1CgroupFs implements CgroupFs {
  constructor(private readonly hierarchies: readonly CgroupHierarchy[]) {}

  private dirs(name: string): string[] {
    return this.hierarchies.map((h) => path.join(h.mountpoint, name));
  }

  private dirOf(subsystem: string, name: string): string | undefined {
    const h = this.hierarchies.find((x) => x.subsystems.includes(subsystem));
    return h === undefined ? undefined : path.join(h.mountpoint, name);
  }

  create(name: string, resources: CgroupResources): Promise<void> {
    return settleSync(() => {
      for (const h of this.hierarchies) {
        if (h.subsystems.includes('cpuset')) createCpuset(h.mountpoint, name);
        else mkdirSync(path.join(h.mountpoint, name), { recursive: true });
      }
      this.write(name, resources);
    });
  }

  update(name: string, resources: CgroupResources): Promise<void> {
    return settleSync(() => {
      this.write(name, resources);
    });
  }

  private write(name: string, resources: CgroupResources): void {
    for (const { subsystem, file, value } of settingFiles(resources)) {
      const dir = this.dirOf(subsystem, name);
      if (dir === undefined) continue;
      writeFileSync(path.join(dir, file), subsystem === 'pids' && value <= 0 ? 'max' : String(value));
    }
  }

  read(name: string): Promise<CgroupResources> {
    return settleSync(() => {
      const value = (subsystem: string, file: string): number | undefined => {
        const dir = this.dirOf(subsystem, name);
        return dir === undefined ? undefined : Number(readFileSync(path.join(dir, file), 'utf8').trim());
      };
      const found: Record<string, number | undefined> = {
        cpuShares: value('cpu', 'cpu.shares'),
        cpuPeriodUs: value('cpu', 'cpu.cfs_period_us'),
        cpuQuotaUs: value('cpu', 'cpu.cfs_quota_us'),
        memoryLimitBytes: value('memory', 'memory.limit_in_bytes'),
      };
      return Object.fromEntries(Object.entries(found).filter(([, v]) => v !== undefined));
    });
  }

  exists(name: string): Promise<boolean> {
    return settleSync(() => this.dirs(name).every(isPresent));
  }

  existsAnywhere(name: string): Promise<boolean> {
    return settleSync(() => this.dirs(name).some(isPresent));
  }

  children(name: string): Promise<string[]> {
    return settleSync(() => [...new Set(this.dirs(name).flatMap(subdirs))].sort());
  }

  pids(name: string): Promise<number[]> {
    return settleSync(() => [...new Set(this.dirs(name).flatMap(pidsUnder))]);
  }

  destroy(name: string): Promise<void> {
    return settleSync(() => {
      for (const dir of this.dirs(name)) removeTree(dir);
    });
  }
}

/** Each level of a cpuset cgroup made in turn, copying cpus and mems from its parent when empty. */
function createCpuset(mountpoint: string, name: string): void {
  let dir = mountpoint;
  for (const part of name.split('/').filter((p) => p !== '')) {
    const parent = dir;
    dir = path.join(dir, part);
    mkdirSync(dir, { recursive: true });
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      const own = readFileSync(path.join(dir, file), 'utf8').trim();
      if (own === '') writeFileSync(path.join(dir, file), readFileSync(path.join(parent, file), 'utf8').trim());
    }
  }
}
