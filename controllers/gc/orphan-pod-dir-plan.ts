/**
 * Which pod directories (`<rootDir>/pods/<uid>`) are orphans to remove: the kubelet's
 * `cleanupOrphanedPodDirs` together with its volume manager's unmounting of orphaned volumes,
 * since nodelet has no separate volume reconciler. Pure: plain data in, a decision out.
 *
 * - Only once every source has synced; a UID some source has, or that has anything in the runtime,
 *   is never an orphan (the reconciler owns it).
 * - nodelet's own mounts are unmounted first: a tmpfs exactly at an emptyDir volume directory
 *   (`volumes/kubernetes.io~empty-dir/<name>`), what a memory-backed emptyDir is.
 * - Any other mount inside the directory (a bind mount, a tmpfs elsewhere, another tool's) keeps
 *   the whole directory, with the reason logged, as the kubelet does: removing across it would
 *   delete another filesystem's data.
 * - A volume plugin directory nodelet does not write (say `kubernetes.io~csi`) keeps the directory
 *   too: its data is not nodelet's to delete.
 */
import path from 'node:path';

/** The volume plugin directories nodelet writes (see `reconcilers/volumes/layout.ts`). */
export const NODELET_PLUGIN_DIRS: ReadonlySet<string> = new Set(['kubernetes.io~empty-dir', 'kubernetes.io~configmap', 'kubernetes.io~secret', 'kubernetes.io~projected', 'kubernetes.io~downward-api']);

/** One directory under `<rootDir>/pods`. */
export interface PodDirListing {
  readonly uid: string;
  /** Absolute path of `<rootDir>/pods/<uid>`. */
  readonly path: string;
  /** Entry names under its `volumes/` (none when it has no `volumes/`). */
  readonly pluginDirs: readonly string[];
}

/** A mount of the host (`/proc/self/mountinfo`). */
export interface PlanMount {
  readonly mountPoint: string;
  readonly fsType: string;
}

export interface OrphanPodDirInput {
  readonly dirs: readonly PodDirListing[];
  readonly mounts: readonly PlanMount[];
  /** Every source has delivered a full list. */
  readonly synced: boolean;
  /** Some source has the pod. */
  readonly known: (uid: string) => boolean;
  /** Pod UIDs with a sandbox or container in the runtime. */
  readonly inRuntime: ReadonlySet<string>;
}

export interface OrphanRemoval {
  readonly dir: PodDirListing;
  /** nodelet's own mounts inside it, deepest first: unmounted before the directory goes. */
  readonly unmount: readonly string[];
}

export interface OrphanSkip {
  readonly dir: PodDirListing;
  readonly reason: string;
}

export interface OrphanPodDirPlan {
  readonly remove: readonly OrphanRemoval[];
  /** Orphans kept, each with why (logged as an error, as the kubelet does). */
  readonly skip: readonly OrphanSkip[];
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(`${root}/`);
}

/** A tmpfs exactly at `<pod>/volumes/kubernetes.io~empty-dir/<name>`: a memory-backed emptyDir. */
function isOwnMount(podPath: string, mount: PlanMount): boolean {
  const relative = path.relative(podPath, mount.mountPoint).split('/');
  return mount.fsType === 'tmpfs' && relative.length === 3 && relative[0] === 'volumes' && relative[1] === 'kubernetes.io~empty-dir' && relative[2] !== '..';
}

function decide(dir: PodDirListing, mounts: readonly PlanMount[]): OrphanRemoval | OrphanSkip {
  const inside = mounts.filter((m) => isInside(dir.path, m.mountPoint));
  const foreign = inside.filter((m) => !isOwnMount(dir.path, m));
  if (foreign.length > 0) return { dir, reason: `mounts not made by nodelet are inside: ${[...new Set(foreign.map((m) => m.mountPoint))].join(', ')}` };
  const unknownPlugins = dir.pluginDirs.filter((name) => !NODELET_PLUGIN_DIRS.has(name));
  if (unknownPlugins.length > 0) return { dir, reason: `volume directories nodelet does not write are inside: ${unknownPlugins.join(', ')}` };
  const unmount = [...new Set(inside.map((m) => m.mountPoint))].sort((a, b) => b.length - a.length);
  return { dir, unmount };
}

/** Decides which pod directories go (after unmounting what) and which orphans stay (why). */
export function planOrphanPodDirs(input: OrphanPodDirInput): OrphanPodDirPlan {
  if (!input.synced) return { remove: [], skip: [] };
  const remove: OrphanRemoval[] = [];
  const skip: OrphanSkip[] = [];
  for (const dir of input.dirs) {
    if (input.known(dir.uid) || input.inRuntime.has(dir.uid)) continue;
    const decision = decide(dir, input.mounts);
    if ('reason' in decision) skip.push(decision);
    else remove.push(decision);
  }
  return { remove, skip };
}
