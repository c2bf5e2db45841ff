/**
 * Which cgroup filesystem the host has, read from its mount table: v1 hierarchies (also on a
 * hybrid host, whose unified mount holds no controllers: runc's v1 manager ignores it there), else
 * the unified cgroup2 mount. The kubelet decides the same way (`libcontainercgroups.IsCgroup2UnifiedMode`).
 */
import { readFile } from 'node:fs/promises';
import { parseMountInfo } from '../../util/mountinfo.js';
import { cgroupHierarchiesOf, V1CgroupFs, type CgroupFs, type CgroupHierarchy } from './cgroupfs.js';
import { hostV2Controllers, V2CgroupFs } from './cgroupfs-v2.js';

/** The host's cgroup layout. */
export type CgroupLayout =
  | { readonly version: 1; readonly hierarchies: readonly CgroupHierarchy[] }
  | { readonly version: 2; readonly mountpoint: string }
  | { readonly version: 'none' };

/** Thrown when pod cgroups are asked for on a host without a cgroup filesystem. */
export class NoCgroupFilesystemError extends Error {
  override readonly name = 'NoCgroupFilesystemError';
}

/** The layout a mount table (`/proc/self/mountinfo`) shows. */
export function cgroupLayout(mountinfo: string): CgroupLayout {
  const entries = parseMountInfo(mountinfo);
  const hierarchies = cgroupHierarchiesOf(entries);
  if (hierarchies.some((h) => h.subsystems.some((s) => !s.startsWith('name=')))) return { version: 1, hierarchies };
  const unified = entries.find((e) => e.fsType === 'cgroup2');
  return unified === undefined ? { version: 'none' } : { version: 2, mountpoint: unified.mountPoint };
}

/** The host's cgroup filesystem, v1 or v2; throws NoCgroupFilesystemError when it has neither. */
export async function hostCgroupFs(mountinfoPath = '/proc/self/mountinfo'): Promise<CgroupFs> {
  const layout = cgroupLayout(await readFile(mountinfoPath, 'utf8'));
  if (layout.version === 1) return new V1CgroupFs(layout.hierarchies);
  if (layout.version === 2) return new V2CgroupFs(layout.mountpoint, hostV2Controllers(layout.mountpoint));
  throw new NoCgroupFilesystemError(`no cgroup filesystem is mounted (${mountinfoPath} lists neither cgroup v1 hierarchies nor a cgroup2 mount): pod cgroups need one, or --cgroups-per-qos=false`);
}
