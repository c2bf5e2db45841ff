/**
 * From signal observations to decisions, as the kubelet's eviction helpers: which thresholds are
 * met (with the minimum reclaim of those met before), which have been met for their grace period,
 * which node conditions they raise, and how long a condition stays after its threshold stopped
 * being met (the pressure transition period). Pure: observations and the previous state in, the
 * next state out.
 */
import { thresholdQuantity, type Signal, type Threshold } from './thresholds.js';

/** One signal's reading: what is available and the capacity a percentage is taken of. */
export interface Observation {
  readonly available: number;
  readonly capacity: number;
}

export type Observations = ReadonlyMap<Signal, Observation>;

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The node condition each signal raises. */
export const SIGNAL_CONDITION: Readonly<Record<Signal, PressureCondition>> = {
  'memory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** The resource a signal's eviction reclaims, as the kubelet names it in its messages. */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, string>> = {
  'memory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/** The kubelet's order of conditions in its messages and of signals to reclaim first. */
const CONDITION_ORDER: readonly PressureCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

/** A stable key of a threshold (signal and whether it is hard) for the first-observed times. */
export function thresholdKey(t: Threshold): string {
  return `${t.signal}/${t.gracePeriodMs === 0 ? 'hard' : 'soft'}`;
}

/**
 * The thresholds met by the observations. With `enforceMinReclaim` a threshold counts as met until
 * the available amount reaches its value plus the minimum reclaim (the kubelet applies this to the
 * thresholds met in the previous round). A signal not observed meets nothing.
 */
export function thresholdsMet(thresholds: readonly Threshold[], observations: Observations, enforceMinReclaim: boolean): Threshold[] {
  return thresholds.filter((t) => {
    const seen = observations.get(t.signal);
    if (seen === undefined) return false;
    const reclaim = enforceMinReclaim && t.minReclaim !== undefined ? thresholdQuantity(t.minReclaim, seen.capacity) : 0;
    return seen.available < thresholdQuantity(t.value, seen.capacity) + reclaim;
  });
}

/** What the manager carries from one round to the next. */
export interface EvictionState {
  /** Thresholds met in the last round (kept met until their minimum reclaim is reached). */
  readonly met: readonly Threshold[];
  /** When each met threshold was first seen met, by {@link thresholdKey}. */
  readonly firstObservedAt: ReadonlyMap<string, number>;
  /** When each condition was last raised by a met threshold. */
  readonly conditionLastObservedAt: ReadonlyMap<PressureCondition, number>;
}

export const INITIAL_EVICTION_STATE: EvictionState = { met: [], firstObservedAt: new Map(), conditionLastObservedAt: new Map() };

/** One round's outcome. */
export interface EvictionRound {
  readonly state: EvictionState;
  /** Thresholds met for at least their grace period: these act (reclaim, then evict). */
  readonly acting: readonly Threshold[];
  /** Conditions the node reports now (raised this round or within the transition period). */
  readonly conditions: readonly PressureCondition[];
}

function union(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const keys = new Set(a.map(thresholdKey));
  return [...a, ...b.filter((t) => !keys.has(thresholdKey(t)))];
}

/**
 * One synchronize round of the kubelet's eviction manager, without the acting: thresholds met now
 * or not yet resolved, their first-observed times, those past their grace period, and the node
 * conditions with the transition period applied.
 */
export function evaluateRound(input: { thresholds: readonly Threshold[]; observations: Observations; previous: EvictionState; nowMs: number; transitionPeriodMs: number }): EvictionRound {
  const { thresholds, observations, previous, nowMs } = input;
  const configured = new Set(thresholds.map(thresholdKey));
  const stillMet = thresholdsMet(previous.met.filter((t) => configured.has(thresholdKey(t))), observations, true);
  const met = union(thresholdsMet(thresholds, observations, false), stillMet);
  const firstObservedAt = new Map(met.map((t) => [thresholdKey(t), previous.firstObservedAt.get(thresholdKey(t)) ?? nowMs]));
  const acting = met.filter((t) => nowMs - (firstObservedAt.get(thresholdKey(t)) ?? nowMs) >= t.gracePeriodMs);
  const conditionLastObservedAt = new Map(previous.conditionLastObservedAt);
  // The kubelet raises a condition as soon as a threshold is met, before its grace period ends.
  for (const t of met) conditionLastObservedAt.set(SIGNAL_CONDITION[t.signal], nowMs);
  for (const [condition, at] of conditionLastObservedAt) if (nowMs - at >= input.transitionPeriodMs && !met.some((t) => SIGNAL_CONDITION[t.signal] === condition)) conditionLastObservedAt.delete(condition);
  const conditions = CONDITION_ORDER.filter((c) => conditionLastObservedAt.has(c));
  return { state: { met, firstObservedAt, conditionLastObservedAt }, acting, conditions };
}

/** The threshold to reclaim for first: memory, then disk, then PIDs (the kubelet's eviction priority); hard before soft. */
export function thresholdToReclaim(acting: readonly Threshold[]): Threshold | undefined {
  const rank = (t: Threshold): number => CONDITION_ORDER.indexOf(SIGNAL_CONDITION[t.signal]) * 2 + (t.gracePeriodMs === 0 ? 0 : 1);
  return [...acting].sort((a, b) => rank(a) - rank(b))[0];
}

/** Whether a threshold's signal is a disk one (node-level reclaim, container and image GC, comes first). */
export function isDiskSignal(signal: Signal): boolean {
  return SIGNAL_CONDITION[signal] === 'DiskPressure';
}
