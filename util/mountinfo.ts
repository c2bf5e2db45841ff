/**
 * The kernel's mount table format (`/proc/<pid>/mountinfo`), parsed: read by the volume manager
 * (mounts under a pod's directory) and by the cgroup manager (which cgroup filesystems the host has).
 */

/** One line of mountinfo: the mount point, the filesystem type and the propagation fields. */
export interface MountEntry {
  readonly mountPoint: string;
  readonly fsType: string;
  /** Super-block options (for tmpfs: `rw,size=16384k,...`). */
  readonly superOptions: string;
  /** The optional fields (`shared:1`, `master:2`, `propagate_from:3`, `unbindable`), none for a private mount. */
  readonly optionalFields: readonly string[];
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
    const fields = left.split(' ');
    const mountPoint = fields[4];
    const [fsType, , superOptions] = right.split(' ');
    if (mountPoint === undefined || fsType === undefined) return [];
    return [{ mountPoint: unescapeMountPath(mountPoint), fsType, superOptions: superOptions ?? '', optionalFields: fields.slice(6) }];
  });
}

/**
 * The mount `dir` lies on: the last mount in the table whose mount point is `dir` or one of its
 * parents (the kubelet's findMountInfo reads the table backwards for the same reason: a later
 * mount on the same point hides an earlier one).
 */
export function mountContaining(entries: readonly MountEntry[], dir: string): MountEntry | undefined {
  return entries.findLast((e) => e.mountPoint === '/' || dir === e.mountPoint || dir.startsWith(`${e.mountPoint}/`));
}

/** The mount propagates mounts to and from its peers (`shared:<group>`). */
export function isSharedMount(entry: MountEntry): boolean {
  return entry.optionalFields.some((f) => f.startsWith('shared:'));
}
