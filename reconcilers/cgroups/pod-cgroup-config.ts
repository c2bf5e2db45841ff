/**
 * What the kubelet (`cgroupsPerQOS: true`, cgroupfs driver) writes into the node's cgroups, as pure
 * functions of pods and node figures (pkg/kubelet/cm: `ResourceConfigForPod`, the QoS manager's
 * `setCPUCgroupConfig`, node allocatable enforcement):
 *
 * ```
 *   <root>/kubepods                      cpu.shares ← allocatable CPU, memory limit ← allocatable memory
 *   <root>/kubepods/pod<uid>             Guaranteed pods
 *   <root>/kubepods/burstable            cpu.shares ← Σ CPU requests of the active Burstable pods
 *   <root>/kubepods/burstable/pod<uid>
 *   <root>/kubepods/besteffort           cpu.shares 2
 *   <root>/kubepods/besteffort/pod<uid>  cpu.shares 2
 * ```
 *
 * A pod's cgroup: cpu.shares from its CPU requests; a CFS quota from its CPU limits when every
 * container declares one (always for Guaranteed pods); a memory limit when every container declares
 * one; pod-level `resources` replace the containers' sums; `overhead` is added to the requests and
 * to every non-zero limit; a pids limit when `--pod-max-pids` is positive.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { podRequests } from '../admission/pod-requests.js';
import { podQosClass, type QosClass } from '../model/qos.js';
import { parseMilliCpu, parseQuantity } from '../model/quantity.js';

/** The kernel's bounds and the kubelet's constants for cpu.shares and the CFS quota. */
export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;
const SHARES_PER_CPU = 1024;
/** Default `cpu.cfs_period_us` (100 ms). */
export const DEFAULT_CFS_PERIOD_US = 100_000;
const MIN_QUOTA_US = 1000;

/** Settings of one cgroup; an absent field is left as it is. */
export interface CgroupResources {
  readonly cpuShares?: number;
  /** `cpu.cfs_quota_us`; -1 is unlimited. */
  readonly cpuQuotaUs?: number;
  readonly cpuPeriodUs?: number;
  readonly memoryLimitBytes?: number;
  /** `pids.max`. */
  readonly pidsLimit?: number;
}

/** How pod cgroups are configured (the kubelet's `--cpu-cfs-quota`, `--pod-max-pids`). */
export interface PodCgroupPolicy {
  /** Whether CPU limits become CFS quotas (the kubelet's default: yes). */
  readonly enforceCpuLimits: boolean;
  readonly cpuPeriodUs: number;
  /** Processes per pod; 0 or less: no limit. */
  readonly podPidsLimit: number;
}

export const DEFAULT_POD_CGROUP_POLICY: PodCgroupPolicy = { enforceCpuLimits: true, cpuPeriodUs: DEFAULT_CFS_PERIOD_US, podPidsLimit: -1 };

/** The kubelet's `MilliCPUToShares`: at least 2, at most 262144. */
export function milliCpuToShares(milliCpu: number): number {
  if (milliCpu <= 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milliCpu * SHARES_PER_CPU) / 1000)));
}

/** The kubelet's `MilliCPUToQuota`: 0 for no limit, else at least 1 ms per period. */
export function milliCpuToQuota(milliCpu: number, periodUs: number): number {
  if (milliCpu <= 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milliCpu * periodUs) / 1000));
}

/** The QoS class the API server recorded (it counts pod-level resources); computed when absent. */
export function podCgroupQos(pod: V1Pod): QosClass {
  const recorded = pod.status?.qosClass;
  return recorded === 'Guaranteed' || recorded === 'Burstable' || recorded === 'BestEffort' ? recorded : podQosClass(pod);
}

/** Cgroup names are paths from the hierarchy's root: `/kubepods/burstable`. */
export function joinCgroup(...parts: readonly string[]): string {
  const joined = parts.join('/').split('/').filter((p) => p !== '');
  return `/${joined.join('/')}`;
}

/** The QoS cgroups under a node root (`--cgroup-root`). */
export interface QosCgroupNames {
  readonly kubepods: string;
  readonly burstable: string;
  readonly besteffort: string;
}

export function qosCgroupNames(cgroupRoot: string): QosCgroupNames {
  const kubepods = joinCgroup(cgroupRoot, 'kubepods');
  return { kubepods, burstable: joinCgroup(kubepods, 'burstable'), besteffort: joinCgroup(kubepods, 'besteffort') };
}

/** The prefix of a pod cgroup's directory name, as the kubelet's (`pod<uid>`). */
export const POD_CGROUP_PREFIX = 'pod';

/** `<root>/kubepods[/<qos>]/pod<uid>`: the sandbox's cgroup parent. */
export function podCgroupName(names: QosCgroupNames, pod: V1Pod): string {
  const qos = podCgroupQos(pod);
  const parent = qos === 'Guaranteed' ? names.kubepods : qos === 'Burstable' ? names.burstable : names.besteffort;
  return joinCgroup(parent, `${POD_CGROUP_PREFIX}${pod.metadata?.uid ?? ''}`);
}

/** The pod UID of a cgroup directory name, undefined for anything that is not a pod cgroup. */
export function podUidOfCgroup(dirName: string): string | undefined {
  if (!dirName.startsWith(POD_CGROUP_PREFIX) || dirName.length === POD_CGROUP_PREFIX.length) return undefined;
  return dirName.slice(POD_CGROUP_PREFIX.length);
}

/** CPU and memory limits of a pod, and whether every container declared each. */
interface PodLimits {
  readonly milliCpu: number;
  readonly memoryBytes: number;
  readonly cpuDeclared: boolean;
  readonly memoryDeclared: boolean;
}

interface Amounts {
  cpu: number;
  memory: number;
}

function limitsOf(container: V1Container): Amounts {
  const limits = container.resources?.limits ?? {};
  return { cpu: limits.cpu === undefined ? 0 : parseMilliCpu(limits.cpu), memory: limits.memory === undefined ? 0 : parseQuantity(limits.memory) };
}

/**
 * resourcehelper's `PodLimits` for CPU and memory: app containers and sidecars summed, at least the
 * largest init step (an init container plus the sidecars started before it). A container (or init
 * step) with a zero limit makes that resource undeclared.
 */
function containerLimits(pod: V1Pod): PodLimits {
  const total: Amounts = { cpu: 0, memory: 0 };
  let cpuDeclared = true;
  let memoryDeclared = true;
  const see = (a: Amounts): void => {
    if (a.cpu === 0) cpuDeclared = false;
    if (a.memory === 0) memoryDeclared = false;
  };
  for (const c of pod.spec?.containers ?? []) {
    const own = limitsOf(c);
    see(own);
    total.cpu += own.cpu;
    total.memory += own.memory;
  }
  const sidecars: Amounts = { cpu: 0, memory: 0 };
  const peak: Amounts = { cpu: 0, memory: 0 };
  for (const c of pod.spec?.initContainers ?? []) {
    const own = limitsOf(c);
    let step: Amounts;
    if (c.restartPolicy === 'Always') {
      total.cpu += own.cpu;
      total.memory += own.memory;
      sidecars.cpu += own.cpu;
      sidecars.memory += own.memory;
      step = { ...sidecars };
    } else {
      step = { cpu: own.cpu + sidecars.cpu, memory: own.memory + sidecars.memory };
    }
    see(step);
    peak.cpu = Math.max(peak.cpu, step.cpu);
    peak.memory = Math.max(peak.memory, step.memory);
  }
  return { milliCpu: Math.max(total.cpu, peak.cpu), memoryBytes: Math.max(total.memory, peak.memory), cpuDeclared, memoryDeclared };
}

/** Whether the pod sets CPU or memory at pod level (`spec.resources`). */
function hasPodLevelResources(pod: V1Pod): boolean {
  const r = pod.spec?.resources;
  return [r?.requests, r?.limits].some((list) => list !== undefined && (list.cpu !== undefined || list.memory !== undefined));
}

/** Pod-level limits replace the containers' for the resources they name, and declare them when non-zero. */
function withPodLevelLimits(pod: V1Pod, fromContainers: PodLimits): PodLimits {
  if (!hasPodLevelResources(pod)) return fromContainers;
  const limits = pod.spec?.resources?.limits ?? {};
  const milliCpu = limits.cpu === undefined ? fromContainers.milliCpu : parseMilliCpu(limits.cpu);
  const memoryBytes = limits.memory === undefined ? fromContainers.memoryBytes : parseQuantity(limits.memory);
  return {
    milliCpu,
    memoryBytes,
    cpuDeclared: fromContainers.cpuDeclared || (limits.cpu !== undefined && milliCpu > 0),
    memoryDeclared: fromContainers.memoryDeclared || (limits.memory !== undefined && memoryBytes > 0),
  };
}

/** The pod's limits; overhead is added to the non-zero ones. */
function podLimits(pod: V1Pod): PodLimits {
  const limits = withPodLevelLimits(pod, containerLimits(pod));
  const overhead = pod.spec?.overhead ?? {};
  const cpuOverhead = overhead.cpu === undefined || limits.milliCpu === 0 ? 0 : parseMilliCpu(overhead.cpu);
  const memoryOverhead = overhead.memory === undefined || limits.memoryBytes === 0 ? 0 : parseQuantity(overhead.memory);
  return { ...limits, milliCpu: limits.milliCpu + cpuOverhead, memoryBytes: limits.memoryBytes + memoryOverhead };
}

/** The pod's CPU request in millicores as the kubelet counts it (pod-level requests, sidecars, overhead). */
export function podCpuRequest(pod: V1Pod): number {
  return podRequests(pod).get('cpu') ?? 0;
}

/** The kubelet's `ResourceConfigForPod` (cgroup v1: no memory QoS), with `--pod-max-pids`. */
export function podCgroupResources(pod: V1Pod, policy: PodCgroupPolicy = DEFAULT_POD_CGROUP_POLICY): CgroupResources {
  const qos = podCgroupQos(pod);
  const pids = policy.podPidsLimit > 0 ? { pidsLimit: policy.podPidsLimit } : {};
  if (qos === 'BestEffort') return { cpuShares: MIN_SHARES, ...pids };
  const limits = podLimits(pod);
  const cpuShares = milliCpuToShares(podCpuRequest(pod));
  const cpuQuotaUs = policy.enforceCpuLimits ? milliCpuToQuota(limits.milliCpu, policy.cpuPeriodUs) : -1;
  const cpu = { cpuQuotaUs, cpuPeriodUs: policy.cpuPeriodUs };
  if (qos === 'Guaranteed') return { cpuShares, ...cpu, memoryLimitBytes: limits.memoryBytes, ...pids };
  return {
    cpuShares,
    ...(limits.cpuDeclared ? cpu : {}),
    ...(limits.memoryDeclared ? { memoryLimitBytes: limits.memoryBytes } : {}),
    ...pids,
  };
}

/** The Burstable QoS cgroup's cpu.shares: the CPU requests of the active Burstable pods, summed. */
export function burstableCpuShares(activePods: readonly V1Pod[]): number {
  const milliCpu = activePods.filter((p) => podCgroupQos(p) === 'Burstable').reduce((sum, p) => sum + podCpuRequest(p), 0);
  return milliCpuToShares(milliCpu);
}

/** The node root (`kubepods`) under `--enforce-node-allocatable=pods`: CPU shares and memory of allocatable. */
export function kubepodsResources(allocatable: { readonly milliCpu: number; readonly memoryBytes: number }): CgroupResources {
  return { cpuShares: milliCpuToShares(allocatable.milliCpu), memoryLimitBytes: allocatable.memoryBytes };
}

/** The settings of one resource: CPU (shares, quota, period) or memory (the limit). */
export function resourceSettings(settings: CgroupResources, resource: 'cpu' | 'memory'): CgroupResources {
  const { cpuShares, cpuQuotaUs, cpuPeriodUs, memoryLimitBytes } = settings;
  const picked = resource === 'cpu' ? { cpuShares, cpuQuotaUs, cpuPeriodUs } : { memoryLimitBytes };
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined));
}

/** A limit as a comparable number: absent or negative (-1, unlimited) is infinite. */
function limitOf(value: number | undefined): number {
  return value === undefined || value < 0 ? Number.POSITIVE_INFINITY : value;
}

/**
 * Whether moving a pod cgroup from `current` to `target` grows or shrinks `resource`. Order matters
 * to the kernel (a v1 child's CFS quota may not exceed its parent's; a memory limit below the usage
 * is refused), so the kubelet raises a pod cgroup before its containers and lowers it after them.
 * CPU compares the quota per period, then the shares; memory the limit (an unset or `-1` limit,
 * and the kernel's page-rounded maximum, count as unlimited).
 */
export function resizeDirection(resource: 'cpu' | 'memory', current: CgroupResources, target: CgroupResources): 'grow' | 'shrink' | 'none' {
  const compare = (a: number, b: number): 'grow' | 'shrink' | 'none' => (b > a ? 'grow' : b < a ? 'shrink' : 'none');
  if (resource === 'memory') {
    return compare(limitOf(unlimitedAboveMax(current.memoryLimitBytes)), limitOf(target.memoryLimitBytes));
  }
  const quotaPerPeriod = (r: CgroupResources): number => limitOf(r.cpuQuotaUs) / (r.cpuPeriodUs ?? 100_000);
  const byQuota = compare(quotaPerPeriod(current), quotaPerPeriod(target));
  return byQuota !== 'none' ? byQuota : compare(current.cpuShares ?? 0, target.cpuShares ?? 0);
}

/** cgroup v1 reports "no limit" as the page-rounded largest signed 64-bit value. */
function unlimitedAboveMax(bytes: number | undefined): number | undefined {
  return bytes !== undefined && bytes >= 2 ** 62 ? -1 : bytes;
}
