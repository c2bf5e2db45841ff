/**
 * The resizable resources of a container (CPU and memory, requests and limits) as plain numbers,
 * the way the kubelet compares them for in-place resize (`resourceRequirements` in
 * kuberuntime_manager.go): an unset value is 0. Also the annotation that records, on each CRI
 * container, the resources it was created with, so an agent restart still knows what a running
 * container was given without asking anything but the runtime.
 */
import type { V1Container, V1ResourceRequirements } from '@kubernetes/client-node';
import type { AppliedLinuxResources, Labels } from '../../cri/types.js';
import { parseMilliCpu, parseQuantity } from './quantity.js';

/** CPU in millicores, memory in bytes; 0 means unset. */
export interface ResourceValues {
  readonly cpuRequestMilli: number;
  readonly cpuLimitMilli: number;
  readonly memoryRequestBytes: number;
  readonly memoryLimitBytes: number;
}

export const NO_VALUES: ResourceValues = { cpuRequestMilli: 0, cpuLimitMilli: 0, memoryRequestBytes: 0, memoryLimitBytes: 0 };

/** The resources a container was created with (JSON of its CPU and memory requirements). */
export const ANNOTATION_RESOURCES = 'nodelet.dev/resources';

type Quantities = Readonly<Record<string, string | number>> | undefined;

function milli(list: Quantities, name: 'cpu'): number {
  const q = list?.[name];
  return q === undefined ? 0 : parseMilliCpu(q);
}

function bytes(list: Quantities, name: 'memory'): number {
  const q = list?.[name];
  return q === undefined ? 0 : Math.floor(parseQuantity(q));
}

/** The values of a container's requirements (only CPU and memory are resizable). */
export function valuesOf(resources: V1ResourceRequirements | undefined): ResourceValues {
  return {
    cpuRequestMilli: milli(resources?.requests, 'cpu'),
    cpuLimitMilli: milli(resources?.limits, 'cpu'),
    memoryRequestBytes: bytes(resources?.requests, 'memory'),
    memoryLimitBytes: bytes(resources?.limits, 'memory'),
  };
}

export function sameValues(a: ResourceValues, b: ResourceValues): boolean {
  return a.cpuRequestMilli === b.cpuRequestMilli && a.cpuLimitMilli === b.cpuLimitMilli && a.memoryRequestBytes === b.memoryRequestBytes && a.memoryLimitBytes === b.memoryLimitBytes;
}

/** `300m`, `1`; the kubelet's DecimalSI milli quantity. */
export function cpuQuantity(milliCpu: number): string {
  return milliCpu % 1000 === 0 ? String(milliCpu / 1000) : `${milliCpu}m`;
}

/** `128Mi`, `64Ki` or plain bytes: the shortest exact binary form. */
export function memoryQuantity(value: number): string {
  if (value !== 0 && value % 2 ** 30 === 0) return `${value / 2 ** 30}Gi`;
  if (value !== 0 && value % 2 ** 20 === 0) return `${value / 2 ** 20}Mi`;
  if (value !== 0 && value % 1024 === 0) return `${value / 1024}Ki`;
  return String(value);
}

/** Requirements holding the set (non-zero) values, for building the cgroup settings of an update. */
export function requirementsOf(values: ResourceValues): V1ResourceRequirements {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (values.cpuRequestMilli > 0) requests.cpu = cpuQuantity(values.cpuRequestMilli);
  if (values.memoryRequestBytes > 0) requests.memory = memoryQuantity(values.memoryRequestBytes);
  if (values.cpuLimitMilli > 0) limits.cpu = cpuQuantity(values.cpuLimitMilli);
  if (values.memoryLimitBytes > 0) limits.memory = memoryQuantity(values.memoryLimitBytes);
  return { requests, limits };
}

/** Only the CPU and memory entries of a requirements list (what allocation tracks). */
export function cpuMemoryOnly(resources: V1ResourceRequirements | undefined): V1ResourceRequirements {
  const pick = (list: Quantities): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const name of ['cpu', 'memory'] as const) {
      const q = list?.[name];
      if (q !== undefined) out[name] = String(q);
    }
    return out;
  };
  return { requests: pick(resources?.requests), limits: pick(resources?.limits) };
}

/** The annotation value of a container about to be created. */
export function resourcesAnnotation(container: V1Container): string {
  return JSON.stringify(valuesOf(container.resources));
}

function isValues(v: unknown): v is ResourceValues {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return ['cpuRequestMilli', 'cpuLimitMilli', 'memoryRequestBytes', 'memoryLimitBytes'].every((k) => typeof r[k] === 'number');
}

/** What a container was created with; undefined for containers created before the annotation existed. */
export function createdWith(annotations: Labels): ResourceValues | undefined {
  const raw = annotations[ANNOTATION_RESOURCES];
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return isValues(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The kubelet's minimums below which the runtime's values are not reported (cm.MinShares, cm.MinMilliCPULimit). */
const MIN_SHARES_MILLI = 2;
const MIN_LIMIT_MILLI = 10;

/** The CPU limit a quota gives (QuotaToMilliCPU); 0 without one. */
function quotaMilli(applied: AppliedLinuxResources): number {
  return applied.cpuPeriod > 0n && applied.cpuQuota > 0n ? Number((applied.cpuQuota * 1000n) / applied.cpuPeriod) : 0;
}

/** The CPU request shares give (SharesToMilliCPU); 0 below the minimum. */
function sharesMilli(applied: AppliedLinuxResources): number {
  return applied.cpuShares >= 2n ? Math.ceil((Number(applied.cpuShares) * 1000) / 1024) : 0;
}

function appliedLimits(limits: Record<string, string>, applied: AppliedLinuxResources): Record<string, string> {
  const out = { ...limits };
  const cpu = quotaMilli(applied);
  if (cpu > 0 && (cpu > MIN_LIMIT_MILLI || milli(limits, 'cpu') > MIN_LIMIT_MILLI)) out.cpu = cpuQuantity(cpu);
  if (applied.memoryLimitInBytes > 0n) out.memory = memoryQuantity(Number(applied.memoryLimitInBytes));
  return out;
}

function appliedRequests(requests: Record<string, string>, applied: AppliedLinuxResources, actuated: ResourceValues | undefined): Record<string, string> {
  const out = { ...requests };
  const cpu = sharesMilli(applied);
  if (cpu > 0 && (cpu > MIN_SHARES_MILLI || milli(requests, 'cpu') > MIN_SHARES_MILLI)) out.cpu = cpuQuantity(cpu);
  if (actuated !== undefined && actuated.memoryRequestBytes > 0) out.memory = memoryQuantity(actuated.memoryRequestBytes);
  return out;
}

/**
 * The resources a running container shows in its status, as the kubelet's
 * `convertContainerStatusResources`: the allocated requirements with the CPU limit, CPU request
 * and memory limit the runtime reports it applies, and the memory request (which no cgroup holds)
 * from what was actuated. Without the runtime's values, the allocated ones.
 */
export function statusResources(allocated: V1ResourceRequirements | undefined, applied: AppliedLinuxResources | undefined, actuated: ResourceValues | undefined): V1ResourceRequirements {
  const { limits, requests } = allocated ?? {};
  if (applied === undefined) return { ...allocated };
  return {
    ...(limits === undefined ? {} : { limits: appliedLimits(limits, applied) }),
    ...(requests === undefined ? {} : { requests: appliedRequests(requests, applied, actuated) }),
  };
}
