/**
 * The pod cgroup flags, under the kubelet's names: `--cgroups-per-qos` (default true: pods go in
 * the `kubepods` QoS hierarchy; false leaves each container where the runtime puts it),
 * `--cgroup-root` (default `/`: the hierarchy is `/kubepods`), `--pod-max-pids` (default -1: no
 * limit) and `--cpu-cfs-quota` (default true: CPU limits become CFS quotas). Only the cgroupfs
 * driver is implemented (v1, and v2 tested on a laid-out tree); the driver is the runtime's
 * (`cmd/assembly/pod-cgroups.ts`).
 */
import { FlagError, oneOf, type FlagSpecs } from '../util/flags.js';

export const CGROUP_FLAGS = {
  'cgroups-per-qos': { type: 'string', value: 'true|false', default: 'true', description: 'put every pod in a cgroup under the kubepods QoS hierarchy (cgroup v1, cgroupfs driver)' },
  'cgroup-root': { type: 'string', value: 'CGROUP', default: '/', description: 'parent of the kubepods cgroup' },
  'pod-max-pids': { type: 'string', value: 'N', default: '-1', description: 'processes per pod (-1: no limit)' },
  'cpu-cfs-quota': { type: 'string', value: 'true|false', default: 'true', description: 'enforce CPU limits with CFS quotas' },
} as const satisfies FlagSpecs;

/** Pod cgroup settings; undefined when `--cgroups-per-qos=false`. */
export interface CgroupSettings {
  readonly cgroupRoot: string;
  readonly podPidsLimit: number;
  readonly enforceCpuLimits: boolean;
}

interface CgroupFlagValues {
  readonly 'cgroups-per-qos': string;
  readonly 'cgroup-root': string;
  readonly 'pod-max-pids': string;
  readonly 'cpu-cfs-quota': string;
}

const BOOLEANS = ['true', 'false'] as const;

/** @throws FlagError on a bad value. */
export function parseCgroupFlags(values: CgroupFlagValues): CgroupSettings | undefined {
  const perQos = oneOf('cgroups-per-qos', values['cgroups-per-qos'], BOOLEANS) === 'true';
  const root = values['cgroup-root'];
  if (!root.startsWith('/') || root.split('/').some((part) => part === '..' || part === '.')) throw new FlagError(`--cgroup-root must be an absolute cgroup path, got "${root}"`);
  if (!/^-?\d+$/.test(values['pod-max-pids'])) throw new FlagError(`--pod-max-pids must be an integer, got "${values['pod-max-pids']}"`);
  const enforceCpuLimits = oneOf('cpu-cfs-quota', values['cpu-cfs-quota'], BOOLEANS) === 'true';
  if (!perQos) return undefined;
  return { cgroupRoot: root, podPidsLimit: Number(values['pod-max-pids']), enforceCpuLimits };
}
