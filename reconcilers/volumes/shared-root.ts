/**
 * The root directory on a shared mount, as the kubelet makes it at start (setupDataDirs →
 * MakeRShared): a volume mounted with `mountPropagation: Bidirectional` (or HostToContainer) is a
 * bind mount from under `<root>/pods/`, and the runtime refuses Bidirectional propagation from a
 * path whose mount is not shared ("is mounted on / but it is not a shared mount"). If the mount
 * the root lies on is not shared, the root is bind-mounted onto itself and made rshared; the bind
 * mount stays (the next start finds it shared and does nothing), as the kubelet's does.
 *
 * Under the chart the root is a hostPath with Bidirectional propagation, already shared.
 */
import { isSharedMount, mountContaining, type MountEntry } from '../../util/mountinfo.js';

/** The mount table and the `mount` command; injectable for tests. */
export interface SharedRootDeps {
  readMounts(): Promise<readonly MountEntry[]>;
  /** Runs util-linux `mount` with these arguments; rejects when it fails. */
  mount(args: readonly string[]): Promise<void>;
}

/** Making the root directory shared failed: the agent does not start (the kubelet's "error configuring root directory"). */
export class SharedRootError extends Error {
  override readonly name = 'SharedRootError';
  constructor(readonly dir: string, override readonly cause: unknown) {
    super(`error configuring root directory ${dir}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

/**
 * Makes `dir` (absolute, existing) lie on a shared mount; what was done.
 * @throws SharedRootError when the table has no mount for it or `mount` fails.
 */
export async function makeRootShared(dir: string, deps: SharedRootDeps): Promise<'already-shared' | 'bind-mounted'> {
  const entry = mountContaining(await deps.readMounts(), dir);
  if (entry === undefined) throw new SharedRootError(dir, new Error('no mount in the mount table holds it'));
  if (isSharedMount(entry)) return 'already-shared';
  try {
    await deps.mount(['--bind', dir, dir]);
    await deps.mount(['--make-rshared', dir]);
  } catch (error) {
    throw new SharedRootError(dir, error);
  }
  return 'bind-mounted';
}
