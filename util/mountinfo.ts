/**
 * The kernel's mount table format (`/proc/<pid>/mountinfo`), parsed: read by the volume manager
 * (mounts under a pod's directory) and by the cgroup manager (which cgroup filesystems the host has).
 */

/** One line of mountinfo: the mount point and the filesystem type. */
export interface MountEntry {
  readonly mountPoint: string;
  readonly fsType: string;
  /** Super-block options (for tmpfs: `rw,size=16384k,...`). */
  readonly superOptions: string;
}

/** Undoes mountinfo's octal escapes (`\040` for a space). */
function unescapeMountPath(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** Parses `/proc/<pid>/mountinfo`. */
export function parseMountInfo(text: string): MountEntry[] {
  return text.split('\n').flatMap((line): MountEntry[] => {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) return [];
    const mountPoint = left.split(' ')[4];
    const [fsType, , superOptions] = right.split(' ');
    if (mountPoint === undefined || fsType === undefined) return [];
    return [{ mountPoint: unescapeMountPath(mountPoint), fsType, superOptions: superOptions ?? '' }];
  });
}
