/**
 * The NodeAgent's node-policy settings, under the kubelet's configuration names: the crash-loop
 * backoff maximum (`crashLoopBackOff.maxContainerRestartPeriod`), image pull concurrency and rate
 * (`serializeImagePulls`, `maxParallelImagePulls`, `registryPullQPS`, `registryBurst`) and the
 * resources held back from pods (`systemReserved`, `kubeReserved`). Pure readers of untrusted JSON:
 * a bad field falls back to the agent's flag value and is reported.
 */
import { parseMilliCpu, parseQuantity } from '../../reconcilers/model/quantity.js';
import { isRecord } from '../../util/is-record.js';
import type { FieldReader } from './field-reader.js';

/** `crashLoopBackOff`: the longest wait before restarting a crashed container. */
export interface CrashLoopBackOffSettings {
  /** 1 s to 5 min; under 10 s it is also the first wait. */
  readonly maxContainerRestartPeriodMs: number;
}

/** How image pulls share the runtime and the registry, node-wide. */
export interface ImagePullSettings {
  /** One pull at a time (the kubelet's default). */
  readonly serializeImagePulls: boolean;
  /** Pulls at once when not serialized; `null`: no limit. */
  readonly maxParallelImagePulls: number | null;
  /** Pulls started per second, on average (0: no limit); a pull over the rate fails with `pull QPS exceeded`. */
  readonly registryPullQPS: number;
  /** Pulls that may start at once above the rate. */
  readonly registryBurst: number;
}

/** Resource name → quantity held back from pods (`cpu`, `memory`, `ephemeral-storage`, `pid`). */
export type ReservedResources = Readonly<Record<string, string>>;

/** The kubelet's defaults. */
export const DEFAULT_CRASH_LOOP_BACK_OFF: CrashLoopBackOffSettings = { maxContainerRestartPeriodMs: 300_000 };
export const DEFAULT_IMAGE_PULLS: ImagePullSettings = { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 };

/** Resources a reservation may name (the kubelet's `--system-reserved`/`--kube-reserved` keys). */
export const RESERVABLE_RESOURCES = ['cpu', 'memory', 'ephemeral-storage', 'pid'] as const;

const RESTART_PERIOD_MS = { min: 1000, max: 300_000 };
const PARALLEL_PULLS = { min: 1, max: 64 };
const PULL_QPS = { min: 0, max: 1000 };
const PULL_BURST = { min: 0, max: 1000 };

function nullIfZero(n: number): number | null {
  return n === 0 ? null : n;
}

/** `spec.crashLoopBackOff`. */
export function readCrashLoopBackOff(reader: FieldReader, base: CrashLoopBackOffSettings): CrashLoopBackOffSettings {
  return { maxContainerRestartPeriodMs: reader.durationMs('maxContainerRestartPeriod', RESTART_PERIOD_MS, base.maxContainerRestartPeriodMs) };
}

/**
 * `spec.imagePulls`. As the kubelet validates it: `maxParallelImagePulls` other than 1 needs
 * `serializeImagePulls: false`; such a pair falls back to the flags' pull concurrency.
 */
export function readImagePulls(reader: FieldReader, base: ImagePullSettings): ImagePullSettings {
  const parallel = reader.raw('maxParallelImagePulls');
  const pulls: ImagePullSettings = {
    serializeImagePulls: reader.bool('serializeImagePulls', base.serializeImagePulls),
    // null (or unset with no flag limit) means no limit.
    maxParallelImagePulls: parallel === null ? null : nullIfZero(reader.intWithin('maxParallelImagePulls', PARALLEL_PULLS, base.maxParallelImagePulls ?? 0)),
    registryPullQPS: reader.number('registryPullQPS', PULL_QPS, base.registryPullQPS),
    registryBurst: reader.intWithin('registryBurst', PULL_BURST, base.registryBurst),
  };
  if (pulls.serializeImagePulls && pulls.maxParallelImagePulls !== null && pulls.maxParallelImagePulls !== 1) {
    const message = `must be 1 or unset when serializeImagePulls is true, got ${pulls.maxParallelImagePulls}`;
    return reader.refuse('maxParallelImagePulls', message, { ...pulls, serializeImagePulls: base.serializeImagePulls, maxParallelImagePulls: base.maxParallelImagePulls });
  }
  return pulls;
}

/** Why a reservation is not one (unknown resource, bad or negative quantity), or undefined. */
export function reservationProblem(reserved: Readonly<Record<string, unknown>>): string | undefined {
  for (const [name, quantity] of Object.entries(reserved)) {
    if (!(RESERVABLE_RESOURCES as readonly string[]).includes(name)) return `unknown resource "${name}" (one of ${RESERVABLE_RESOURCES.join(', ')})`;
    if (typeof quantity !== 'string' && typeof quantity !== 'number') return `${name}: must be a quantity such as 100m or 1Gi, got ${JSON.stringify(quantity)}`;
    let amount: number;
    try {
      amount = name === 'cpu' ? parseMilliCpu(quantity) : parseQuantity(quantity);
    } catch {
      return `${name}: must be a quantity such as 100m or 1Gi, got ${JSON.stringify(quantity)}`;
    }
    if (!(amount >= 0)) return `${name}: must not be negative, got ${JSON.stringify(quantity)}`;
  }
  return undefined;
}

/** `spec.systemReserved` or `spec.kubeReserved`: a whole map, or the flag's map when any entry is bad. */
export function readReserved(reader: FieldReader, key: 'systemReserved' | 'kubeReserved', base: ReservedResources): ReservedResources {
  const value = reader.raw(key);
  if (value === undefined) return base;
  if (!isRecord(value)) return reader.refuse(key, `must be a map of resource to quantity, got ${JSON.stringify(value)}`, base);
  const problem = reservationProblem(value);
  if (problem !== undefined) return reader.refuse(key, problem, base);
  return Object.fromEntries(Object.entries(value).map(([name, quantity]) => [name, String(quantity)]));
}
