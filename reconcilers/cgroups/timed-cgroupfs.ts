/**
 * A {@link CgroupFs} whose writes are timed, as the kubelet's cgroup manager times `Create`,
 * `Update` and `Destroy` (`kubelet_cgroup_manager_duration_seconds`); reads pass through untimed.
 */
import type { Clock } from '../../util/clock.js';
import type { CgroupResources } from './pod-cgroup-config.js';
import type { CgroupFs } from './cgroupfs.js';

/** The cgroup manager operations the kubelet times. */
export type CgroupOperation = 'create' | 'update' | 'destroy';

/** Told each timed operation's duration, failed ones included; must not throw. */
export type CgroupOperationObserver = (operation: CgroupOperation, seconds: number) => void;

export function timedCgroupFs(fs: CgroupFs, clock: Clock, observe: CgroupOperationObserver): CgroupFs {
  const timed = async (operation: CgroupOperation, run: () => Promise<void>): Promise<void> => {
    const started = clock.now();
    try {
      await run();
    } finally {
      observe(operation, (clock.now() - started) / 1000);
    }
  };
  return {
    create: (name: string, resources: CgroupResources) => timed('create', () => fs.create(name, resources)),
    update: (name: string, resources: CgroupResources) => timed('update', () => fs.update(name, resources)),
    destroy: (name: string) => timed('destroy', () => fs.destroy(name)),
    read: (name) => fs.read(name),
    exists: (name) => fs.exists(name),
    existsAnywhere: (name) => fs.existsAnywhere(name),
    children: (name) => fs.children(name),
    pids: (name) => fs.pids(name),
  };
}
