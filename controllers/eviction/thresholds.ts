/**
 * Eviction thresholds as the kubelet configures them (`pkg/kubelet/eviction/api`, `helpers.go`
 * parseThresholdConfig): a signal, a quantity or a percentage of the signal's capacity below which
 * it is met, a grace period (0: a hard threshold), and a minimum reclaim. Pure: maps of strings in
 * (`{"memory.available": "100Mi"}`, the kubelet's `evictionHard` form), thresholds out.
 */
import { InvalidQuantityError, parseQuantity } from '../../reconcilers/model/quantity.js';
import { parseGoDurationMsOr } from '../../util/go-duration.js';

/** The signals nodelet observes (the kubelet's Linux signals; the allocatable and container-fs ones are left out). */
export const SIGNALS = ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'] as const;
export type Signal = (typeof SIGNALS)[number];

/** A threshold's value: an absolute quantity (bytes, inodes, pids) or a fraction of the capacity. */
export type ThresholdValue = { readonly quantity: number; readonly text: string } | { readonly percentage: number; readonly text: string };

/** One threshold: met while the signal's available amount is below the value. */
export interface Threshold {
  readonly signal: Signal;
  readonly value: ThresholdValue;
  /** 0 for a hard threshold; a soft one must be met this long before it acts. */
  readonly gracePeriodMs: number;
  /** Once met, the threshold stays met until the available amount is this much above its value. */
  readonly minReclaim?: ThresholdValue;
}

/** The kubelet's eviction settings as maps keyed by signal. */
export interface EvictionConfig {
  readonly hard: Readonly<Record<string, string>>;
  readonly soft: Readonly<Record<string, string>>;
  readonly softGracePeriod: Readonly<Record<string, string>>;
  readonly minimumReclaim: Readonly<Record<string, string>>;
  /** How long a pressure condition stays True after its threshold stopped being met (kubelet default 5 m). */
  readonly pressureTransitionPeriodSeconds: number;
  /** The grace period (at most the pod's own) of a pod evicted for a soft threshold; hard thresholds kill at once (kubelet `evictionMaxPodGracePeriod`, default 0). */
  readonly maxPodGracePeriodSeconds: number;
}

/** The kubelet's defaults on Linux. */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
};
export const DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS = 300;

export const DEFAULT_EVICTION: EvictionConfig = {
  hard: DEFAULT_EVICTION_HARD,
  soft: {},
  softGracePeriod: {},
  minimumReclaim: {},
  pressureTransitionPeriodSeconds: DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS,
  maxPodGracePeriodSeconds: 0,
};

/** A threshold setting that cannot be used; `field` names it as `hard[memory.available]` etc. */
export class InvalidThresholdError extends Error {
  override readonly name = 'InvalidThresholdError';
  constructor(readonly field: string, readonly detail: string) {
    super(`${field}: ${detail}`);
  }
}

export function isInvalidThresholdError(err: unknown): err is InvalidThresholdError {
  return err instanceof InvalidThresholdError;
}

export function isSignal(name: string): name is Signal {
  return (SIGNALS as readonly string[]).includes(name);
}

/** `100Mi`, `5%`, `0.5%`: a non-negative quantity or a percentage from 0 to 100. */
export function parseThresholdValue(field: string, raw: string): ThresholdValue {
  const text = raw.trim();
  if (text.endsWith('%')) {
    const percent = Number(text.slice(0, -1));
    if (text.length === 1 || !Number.isFinite(percent) || percent < 0 || percent > 100) throw new InvalidThresholdError(field, `percentage must be from 0% to 100%, got "${raw}"`);
    return { percentage: percent / 100, text };
  }
  let quantity: number;
  try {
    quantity = parseQuantity(text);
  } catch (err: unknown) {
    if (err instanceof InvalidQuantityError) throw new InvalidThresholdError(field, `not a quantity or percentage: "${raw}"`);
    throw err;
  }
  if (quantity < 0) throw new InvalidThresholdError(field, `must not be negative, got "${raw}"`);
  return { quantity, text };
}

/** Go's duration syntax as the kubelet's `evictionSoftGracePeriod` takes it (`1m30s`, `90s`, `500ms`). */
export function parseDurationMs(field: string, raw: string): number {
  return parseGoDurationMsOr(raw, (reason) => new InvalidThresholdError(field, reason));
}

function checkSignals(kind: string, map: Readonly<Record<string, string>>): void {
  for (const name of Object.keys(map)) if (!isSignal(name)) throw new InvalidThresholdError(`${kind}[${name}]`, `unknown signal; one of ${SIGNALS.join(', ')}`);
}

function minReclaimOf(config: EvictionConfig, signal: Signal): ThresholdValue | undefined {
  const raw = config.minimumReclaim[signal];
  return raw === undefined ? undefined : parseThresholdValue(`minimumReclaim[${signal}]`, raw);
}

/**
 * The thresholds of a configuration, hard ones first, as the kubelet's parseThresholdConfig: a soft
 * threshold needs a grace period and every grace period a soft threshold; `0`/`0%` disables a hard
 * threshold. @throws InvalidThresholdError naming the field.
 */
export function parseThresholds(config: EvictionConfig): Threshold[] {
  for (const [kind, map] of [['hard', config.hard], ['soft', config.soft], ['softGracePeriod', config.softGracePeriod], ['minimumReclaim', config.minimumReclaim]] as const) checkSignals(kind, map);
  const thresholds: Threshold[] = [];
  for (const signal of SIGNALS) {
    const hard = config.hard[signal];
    if (hard === undefined) continue;
    const value = parseThresholdValue(`hard[${signal}]`, hard);
    if (('quantity' in value ? value.quantity : value.percentage) === 0) continue;
    const minReclaim = minReclaimOf(config, signal);
    thresholds.push({ signal, value, gracePeriodMs: 0, ...(minReclaim === undefined ? {} : { minReclaim }) });
  }
  for (const signal of SIGNALS) {
    const soft = config.soft[signal];
    const grace = config.softGracePeriod[signal];
    if (soft === undefined && grace === undefined) continue;
    if (soft === undefined) throw new InvalidThresholdError(`softGracePeriod[${signal}]`, 'a grace period needs a soft threshold of the same signal');
    if (grace === undefined) throw new InvalidThresholdError(`soft[${signal}]`, 'a soft threshold needs a grace period (softGracePeriod)');
    const gracePeriodMs = parseDurationMs(`softGracePeriod[${signal}]`, grace);
    if (gracePeriodMs <= 0) throw new InvalidThresholdError(`softGracePeriod[${signal}]`, 'must be positive');
    const minReclaim = minReclaimOf(config, signal);
    thresholds.push({ signal, value: parseThresholdValue(`soft[${signal}]`, soft), gracePeriodMs, ...(minReclaim === undefined ? {} : { minReclaim }) });
  }
  return thresholds;
}

/** A threshold value in the signal's unit against its capacity (the kubelet's GetThresholdQuantity). */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  return 'quantity' in value ? value.quantity : Math.floor(capacity * value.percentage);
}

/**
 * `memory.available<100Mi,nodefs.available<10%`: the kubelet's flag syntax for `--eviction-hard`,
 * `--eviction-soft`; `--eviction-soft-grace-period` and `--eviction-minimum-reclaim` use `=`.
 * @throws InvalidThresholdError on an entry without the separator.
 */
export function parseSignalMap(flag: string, raw: string, separator: '<' | '='): Record<string, string> {
  const map: Record<string, string> = {};
  for (const entry of raw.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    const at = entry.indexOf(separator);
    if (at <= 0) throw new InvalidThresholdError(`--${flag}`, `entries are SIGNAL${separator}VALUE, got "${entry}"`);
    map[entry.slice(0, at).trim()] = entry.slice(at + 1).trim();
  }
  return map;
}

/** The hard `memory.available` threshold in bytes (node allocatable subtracts it); 0 when none or a percentage of nothing. */
export function hardReservationBytes(thresholds: readonly Threshold[], signal: 'memory.available' | 'nodefs.available', capacity: number): number {
  const hard = thresholds.find((t) => t.signal === signal && t.gracePeriodMs === 0);
  return hard === undefined ? 0 : thresholdQuantity(hard.value, capacity);
}
