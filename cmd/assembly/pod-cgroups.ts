/**
 * The pod cgroup settings of the agent: the host's cgroup filesystem (v1 hierarchies, else the
 * unified v2 mount), the flags' policy, and the allocatable `kubepods` is limited to (the kubelet's
 * `--enforce-node-allocatable=pods`: capacity less `--system-reserved` and `--kube-reserved`, not
 * less the eviction threshold, so eviction acts before the kernel's OOM killer), following live
 * changes of the reservations.
 */
import { nodeAllocatable as nodeCapacity } from '../../controllers/node/host-info.js';
import { AllocatableView, type Reservations } from '../../controllers/node/allocatable.js';
import { hostCgroupFs } from '../../reconcilers/cgroups/host-cgroupfs.js';
import { timedCgroupFs, type CgroupOperationObserver } from '../../reconcilers/cgroups/timed-cgroupfs.js';
import type { Clock } from '../../util/clock.js';
import { DEFAULT_CFS_PERIOD_US } from '../../reconcilers/cgroups/pod-cgroup-config.js';
import type { PodCgroupSettings } from '../../reconcilers/pod/pod-sync.js';
import type { CgroupSettings } from '../cgroup-flags.js';
import { isCriUnimplemented } from '../../cri/errors.js';
import type { CgroupDriver, RuntimeConfigReader } from '../../cri/types.js';

/** Where the NodeAgent's reservations reach the `kubepods` limits. */
export interface EnforcedAllocatable {
  setReservations(reservations: Reservations): void;
}

/**
 * The runtime manages cgroups with a driver nodelet's pod cgroups do not have (systemd): the agent
 * does not start, rather than give every sandbox a cgroup parent the runtime cannot use.
 */
export class UnsupportedCgroupDriverError extends Error {
  override readonly name = 'UnsupportedCgroupDriverError';
  constructor(readonly driver: CgroupDriver) {
    super(
      `the runtime uses the ${driver} cgroup driver (CRI RuntimeConfig), and nodelet's pod cgroups have only the cgroupfs driver: ` +
        'configure the runtime for cgroupfs (containerd: SystemdCgroup = false) or run nodelet with --cgroups-per-qos=false',
    );
  }
}

/** True when `err` is an {@link UnsupportedCgroupDriverError}. */
export function isUnsupportedCgroupDriverError(err: unknown): err is UnsupportedCgroupDriverError {
  return err instanceof UnsupportedCgroupDriverError;
}

/**
 * The runtime's cgroup driver, as the kubelet's KubeletCgroupDriverFromCRI reads it: what the
 * runtime's RuntimeConfig says; for a runtime without it, cgroupfs (the kubelet's default
 * `cgroupDriver`, and nodelet's only one).
 */
export async function runtimeCgroupDriver(runtime: RuntimeConfigReader): Promise<CgroupDriver> {
  try {
    return (await runtime.runtimeConfig()).cgroupDriver;
  } catch (error) {
    if (isCriUnimplemented(error)) return 'cgroupfs';
    throw error;
  }
}

/**
 * The settings for the per-pod machinery, its cgroup writes timed by `timing`; undefined with
 * `--cgroups-per-qos=false`.
 * @throws UnsupportedCgroupDriverError when pod cgroups are on and the runtime's driver is systemd.
 */
export async function buildPodCgroupSettings(
  flags: CgroupSettings | undefined,
  reservations: Reservations,
  runtime: RuntimeConfigReader,
  timing: { readonly clock: Clock; readonly observe: CgroupOperationObserver },
): Promise<{ cgroups: PodCgroupSettings | undefined; enforced: EnforcedAllocatable }> {
  const view = new AllocatableView(nodeCapacity(), reservations);
  const enforced: EnforcedAllocatable = { setReservations: (r) => { view.setReservations(r); } };
  if (flags === undefined) return { cgroups: undefined, enforced };
  const driver = await runtimeCgroupDriver(runtime);
  if (driver !== 'cgroupfs') throw new UnsupportedCgroupDriverError(driver);
  const fs = timedCgroupFs(await hostCgroupFs(), timing.clock, timing.observe);
  const policy = { enforceCpuLimits: flags.enforceCpuLimits, cpuPeriodUs: DEFAULT_CFS_PERIOD_US, podPidsLimit: flags.podPidsLimit };
  return { cgroups: { fs, cgroupRoot: flags.cgroupRoot, policy, allocatable: () => view }, enforced };
}
