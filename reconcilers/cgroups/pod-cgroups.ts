/**
 * Pod cgroups under the kubelet's QoS hierarchy (its `cgroupsPerQOS: true` with the cgroupfs
 * driver): the node root `kubepods` and its QoS cgroups at start, one cgroup per pod before its
 * sandbox (passed as the sandbox's cgroup parent, so containerd puts the sandbox and every container
 * under it), removed once nothing of the pod runs. Settings come from `pod-cgroup-config.ts`; the
 * filesystem is behind {@link CgroupFs}.
 *
 * Guarantees:
 * - A pod cgroup is created (with the pod's settings) only when missing, as the kubelet's
 *   `EnsureExists`: a restart of the agent never rewrites or removes a running pod's cgroup.
 * - The Burstable QoS cgroup's cpu.shares follow the active Burstable pods: updated before a new
 *   pod cgroup is made, after one is removed, and on every orphan pass.
 * - A pod's cgroup goes when the lifecycle says it terminated or was forgotten: remaining processes
 *   are killed (SIGKILL, as the kubelet's pod cgroup cleanup), then the directories are removed. A
 *   removal that fails is logged; the orphan pass (garbage collection) retries it.
 * - The orphan pass removes pod cgroups whose pod is not kept (a pod some source wants and that has
 *   not terminated, or anything of it still running in the runtime): pods deleted while the agent
 *   was down lose their cgroups once their sandboxes are gone.
 * - No per-pod state is kept: everything is read back from the filesystem.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { CgroupFs } from './cgroupfs.js';
import type { PodCgroupResizer } from '../resize/actuate-resize.js';
import {
  burstableCpuShares,
  DEFAULT_POD_CGROUP_POLICY,
  joinCgroup,
  kubepodsResources,
  MIN_SHARES,
  podCgroupName,
  POD_CGROUP_PREFIX,
  podCgroupResources,
  podUidOfCgroup,
  qosCgroupNames,
  resizeDirection,
  resourceSettings,
  type PodCgroupPolicy,
  type QosCgroupNames,
} from './pod-cgroup-config.js';

/** What the executor needs: the pod's cgroup, made if missing, as the sandbox's cgroup parent. */
export interface PodCgroupParent {
  /** Creates the pod's cgroup when it does not exist; returns its name (`/kubepods/burstable/pod<uid>`). */
  ensurePod(pod: V1Pod): Promise<string>;
}

export interface PodCgroupManagerOptions {
  readonly fs: CgroupFs;
  /** `--cgroup-root`: `/` puts the hierarchy at `/kubepods`. */
  readonly cgroupRoot: string;
  readonly policy?: PodCgroupPolicy;
  /** Node allocatable (capacity less the reservations): the `kubepods` limits. Read at every update. */
  readonly allocatable: () => { readonly milliCpu: number; readonly memoryBytes: number };
  /** Pods that may run (known to a source, not terminated): the Burstable QoS shares count them. */
  readonly activePods: () => readonly V1Pod[];
  /** Sends SIGKILL to a process; injectable for tests. A process already gone is not an error. */
  readonly kill?: (pid: number) => void;
  /** Paces the kill rounds. */
  readonly clock: Clock;
  readonly logger: Logger;
}

/** The kubelet's kill rounds, and the pause between them. */
const KILL_ROUNDS = 5;
const KILL_ROUND_MS = 100;

/** Removal attempts after a pod terminates, and the pause between them. */
const REMOVAL_ATTEMPTS = 5;
const REMOVAL_RETRY_MS = 1000;

/** What one orphan pass did. */
export interface OrphanPass {
  readonly removed: number;
  readonly failed: number;
}

function killProcess(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

export class PodCgroupManager implements PodCgroupParent, PodCgroupResizer, PodLifecycleObserver {
  readonly names: QosCgroupNames;
  private readonly policy: PodCgroupPolicy;
  private readonly kill: (pid: number) => void;

  constructor(private readonly options: PodCgroupManagerOptions) {
    this.names = qosCgroupNames(options.cgroupRoot);
    this.policy = options.policy ?? DEFAULT_POD_CGROUP_POLICY;
    this.kill = options.kill ?? killProcess;
  }

  /** Creates (or updates) `kubepods` with the allocatable limits, and the two QoS cgroups. */
  async start(): Promise<void> {
    const { fs } = this.options;
    await fs.create(this.names.kubepods, kubepodsResources(this.options.allocatable()));
    // Its shares are left as they are: before the sources synced the active pods are not known
    // (a restarted agent must not drop them); the first pod change or orphan pass sets them.
    await fs.create(this.names.burstable, {});
    await fs.create(this.names.besteffort, { cpuShares: MIN_SHARES });
    this.options.logger.info({ kubepods: this.names.kubepods }, 'pod cgroups: QoS hierarchy ready');
  }

  /** The pod's cgroup name; pure. */
  podCgroup(pod: V1Pod): string {
    return podCgroupName(this.names, pod);
  }

  async ensurePod(pod: V1Pod): Promise<string> {
    const name = this.podCgroup(pod);
    if (await this.options.fs.exists(name)) return name;
    // As the kubelet: the QoS shares count the new pod before its cgroup exists.
    await this.updateQos();
    await this.options.fs.create(name, podCgroupResources(pod, this.policy));
    this.options.logger.info({ podUID: pod.metadata?.uid, cgroup: name }, 'pod cgroup created');
    return name;
  }

  /**
   * The pod cgroup's step of an in-place resize ({@link PodCgroupResizer}): sets `resource` to what
   * the allocated `pod` needs, only when that change goes in `direction` (the resizer calls `grow`
   * before the containers' updates and `shrink` after them). CPU changes update the QoS shares too.
   */
  async resize(pod: V1Pod, resource: 'cpu' | 'memory', direction: 'grow' | 'shrink'): Promise<void> {
    const name = this.podCgroup(pod);
    if (!(await this.options.fs.exists(name))) return;
    const target = resourceSettings(podCgroupResources(pod, this.policy), resource);
    const current = resourceSettings(await this.options.fs.read(name), resource);
    if (resizeDirection(resource, current, target) !== direction) return;
    // An unset memory limit on a pod that had one means unlimited again: -1.
    const settings = resource === 'memory' && target.memoryLimitBytes === undefined ? { memoryLimitBytes: -1 } : target;
    await this.options.fs.update(name, settings);
    if (resource === 'cpu') await this.updateQos();
    this.options.logger.info({ podUID: pod.metadata?.uid, cgroup: name, resource, direction, settings }, 'pod cgroup resized');
  }

  /** The Burstable shares from the active pods, and the `kubepods` limits from allocatable. */
  async updateQos(): Promise<void> {
    await this.options.fs.update(this.names.kubepods, kubepodsResources(this.options.allocatable()));
    await this.options.fs.update(this.names.burstable, { cpuShares: burstableCpuShares(this.options.activePods()) });
  }

  /** Every pod cgroup on the node: UID → cgroup name. */
  async podCgroups(): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const parent of [this.names.kubepods, this.names.burstable, this.names.besteffort]) {
      for (const child of await this.options.fs.children(parent)) {
        const uid = podUidOfCgroup(child);
        if (uid !== undefined) found.set(uid, joinCgroup(parent, child));
      }
    }
    return found;
  }

  /**
   * Kills what is left in the pod's cgroup and removes it (under every QoS parent: the pod's
   * class is not needed); then the QoS shares. Looks only at the pod's own names, never lists the
   * parents: with 110 pods a listing reads every pod directory of every hierarchy, twice per pod.
   */
  async removePod(uid: string): Promise<boolean> {
    let removed = false;
    for (const parent of [this.names.kubepods, this.names.burstable, this.names.besteffort]) {
      const name = joinCgroup(parent, `${POD_CGROUP_PREFIX}${uid}`);
      if (!(await this.options.fs.existsAnywhere(name))) continue;
      await this.destroy(name);
      this.options.logger.info({ podUID: uid, cgroup: name }, 'pod cgroup removed');
      removed = true;
    }
    if (removed) await this.updateQos();
    return removed;
  }

  /** The kubelet's `Destroy`: SIGKILL to every process (a few rounds), then rmdir everywhere. */
  private async destroy(name: string): Promise<void> {
    let pids = await this.options.fs.pids(name);
    for (let round = 0; pids.length > 0 && round < KILL_ROUNDS; round += 1) {
      // Killed processes leave the cgroup once reaped.
      if (round > 0) await new Promise<void>((resolve) => this.options.clock.setTimeout(resolve, KILL_ROUND_MS));
      this.options.logger.warn({ cgroup: name, pids }, 'killing processes left in a pod cgroup');
      for (const pid of pids) this.kill(pid);
      pids = await this.options.fs.pids(name);
    }
    await this.options.fs.destroy(name);
  }

  /** Removes the cgroups of pods `keep` does not name; failures are logged and counted. */
  async removeOrphans(keep: (uid: string) => boolean): Promise<OrphanPass> {
    let removed = 0;
    let failed = 0;
    for (const [uid, name] of await this.podCgroups()) {
      if (keep(uid)) continue;
      try {
        await this.destroy(name);
        removed += 1;
        this.options.logger.info({ podUID: uid, cgroup: name }, 'removed the cgroup of a pod that no longer runs');
      } catch (error) {
        failed += 1;
        this.options.logger.warn({ podUID: uid, cgroup: name, err: error }, 'removing an orphaned pod cgroup failed');
      }
    }
    await this.updateQos();
    return { removed, failed };
  }

  /**
   * The orphan pass: keeps the active pods and the UIDs with anything running in the runtime
   * (`running`: ready sandboxes and running containers), removes every other pod cgroup.
   */
  async removeOrphansExcept(running: ReadonlySet<string>): Promise<OrphanPass> {
    const active = new Set(this.options.activePods().map((p) => p.metadata?.uid ?? ''));
    return this.removeOrphans((uid) => active.has(uid) || running.has(uid));
  }

  podTerminated(key: PodKey): void {
    this.removeInBackground(key, 'terminated');
  }

  podForgotten(key: PodKey): void {
    this.removeInBackground(key, 'forgotten');
  }

  /**
   * Removal right after termination can meet the runtime still tearing a container's cgroup down
   * (EBUSY): a few retries a second apart, as the kubelet's housekeeping retries; then the orphan pass.
   */
  private removeInBackground(key: PodKey, why: string, attempt = 1): void {
    this.removePod(key.uid).catch((error: unknown) => {
      if (attempt < REMOVAL_ATTEMPTS) {
        this.options.clock.setTimeout(() => { this.removeInBackground(key, why, attempt + 1); }, REMOVAL_RETRY_MS);
        return;
      }
      this.options.logger.warn({ podUID: key.uid, err: error, why, attempts: attempt }, 'removing the pod cgroup failed; garbage collection retries');
    });
  }
}
