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
import { DEFAULT_CFS_PERIOD_US } from '../../reconcilers/cgroups/pod-cgroup-config.js';
import type { PodCgroupSettings } from '../../reconcilers/pod/pod-sync.js';
import type { CgroupSettings } from '../cgroup-flags.js';

/** Where the NodeAgent's reservations reach the `kubepods` limits. */
export interface EnforcedAllocatable {
  setReservations(reservations: Reservations): void;
}

/** The settings for the per-pod machinery; undefined with `--cgroups-per-qos=false`. */
export async function buildPodCgroupSettings(
  flags: CgroupSettings | undefined,
  reservations: Reservations,
): Promise<{ cgroups: PodCgroupSettings | undefined; enforced: EnforcedAllocatable }> {
  const view = new AllocatableView(nodeCapacity(), reservations);
  const enforced: EnforcedAllocatable = { setReservations: (r) => { view.setReservations(r); } };
  if (flags === undefined) return { cgroups: undefined, enforced };
  const fs = await hostCgroupFs();
  const policy = { enforceCpuLimits: flags.enforceCpuLimits, cpuPeriodUs: DEFAULT_CFS_PERIOD_US, podPidsLimit: flags.podPidsLimit };
  return { cgroups: { fs, cgroupRoot: flags.cgroupRoot, policy, allocatable: () => view }, enforced };
}
