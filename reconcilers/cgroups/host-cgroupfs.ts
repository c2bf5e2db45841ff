/**
 * Which cgroup filesystem the host has, read from its mount table: v1 hierarchies (also on a
 * hybrid host, whose unified mount holds no controllers: runc's v1 manager ignores it there), else
 * the unified cgroup2 mount. The kubelet decides the same way (`libcontainercgroups.IsCgroup2UnifiedMode`).
 */
import { readFile } from 'node:fs/promises';
import { parseCgroupMounts, V1CgroupFs, type CgroupFs, type CgroupHierarchy } from './cgroupfs.js';
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
  const hierarchies = parseCgroupMounts(mountinfo).filter((h) => h.subsystems.some((s) => !s.startsWith('name=')));
  if (hierarchies.length > 0) return { version: 1, hierarchies: parseCgroupMounts(mountinfo) };
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    const mountpoint = before?.split(' ')[4];
    if (after?.split(' ')[0] === 'cgroup2' && mountpoint !== undefined) return { version: 2, mountpoint };
  }
  return { version: 'none' };
}

/** The host's cgroup filesystem, v1 or v2; throws NoCgroupFilesystemError when it has neither. */
export async function hostCgroupFs(mountinfoPath = '/proc/self/mountinfo'): Promise<{ fs: CgroupFs; layout: CgroupLayout }> {
  const layout = cgroupLayout(await readFile(mountinfoPath, 'utf8'));
  if (layout.version === 1) return { fs: new V1CgroupFs(layout.hierarchies), layout };
  if (layout.version === 2) return { fs: new V2CgroupFs(layout.mountpoint, hostV2Controllers(layout.mountpoint)), layout };
  throw new NoCgroupFilesystemError(`no cgroup filesystem is mounted (${mountinfoPath} lists neither cgroup v1 hierarchies nor a cgroup2 mount): pod cgroups need one, or --cgroups-per-qos=false`);
}
