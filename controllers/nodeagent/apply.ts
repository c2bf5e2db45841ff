/**
 * Applies resolved live settings to the running agent: only the settings that changed, each through
 * its own setter, so one that throws neither stops the others nor crashes the agent. A setting whose
 * setter threw keeps its previous value in the outcome, so the next apply (the next spec event or
 * resync) tries it again.
 */
import type { EvictionConfig } from '../eviction/thresholds.js';
import type { CrashLoopBackOffSettings, GcSettings, ImagePullSettings, LiveSettings, LogLevel, LogRotationSettings, ReservedResources, SettingProblem } from './settings.js';

/** Where each live setting takes effect (the agent wires these to its parts). */
export interface SettingsTargets {
  /** The reconcile queue's worker concurrency. */
  setWorkerConcurrency(n: number): void;
  /** The full-resync loop's period. */
  setResyncPeriodSeconds(seconds: number): void;
  /** The `pods` capacity the Node advertises. */
  setMaxPods(n: number): void;
  /** Whether new pods may start (the reconciler's admission). */
  setPaused(paused: boolean): void;
  /** The root logger's level (children follow it). */
  setLogLevel(level: LogLevel): void;
  /** Cluster DNS servers of sandboxes created from now on (running ones keep theirs). */
  setClusterDNS(servers: readonly string[]): void;
  /** Cluster domain of sandboxes and hosts files formed from now on. */
  setClusterDomain(domain: string): void;
  /** The garbage collector's policy (both collections run at once with it). */
  setGc(gc: GcSettings): void;
  /** The container log rotation policy (a round runs at once with it). */
  setLogRotation(logRotation: LogRotationSettings): void;
  /** The container restart backoff's maximum (running waits are cut to it at once). */
  setCrashLoopBackOff(crashLoopBackOff: CrashLoopBackOffSettings): void;
  /** Pull concurrency and rate for pulls that start from now on. */
  setImagePulls(imagePulls: ImagePullSettings): void;
  /** Resources held back from pods: the Node's allocatable is posted again at once. */
  setReserved(reserved: { readonly systemReserved: ReservedResources; readonly kubeReserved: ReservedResources }): void;
  /** The eviction manager's thresholds and periods (a round runs at once with them). */
  setEviction(eviction: EvictionConfig): void;
}

/** The settings, each applied through its own setter. */
type LiveField =
  | 'workerConcurrency'
  | 'resyncPeriodSeconds'
  | 'maxPods'
  | 'paused'
  | 'logLevel'
  | 'clusterDNS'
  | 'clusterDomain'
  | 'gc'
  | 'logRotation'
  | 'crashLoopBackOff'
  | 'imagePulls'
  | 'systemReserved'
  | 'kubeReserved'
  | 'eviction';

/** One setter and the fields it takes (the two reservations go together: allocatable is computed from the pair). */
interface Applier {
  readonly fields: readonly LiveField[];
  readonly apply: (targets: SettingsTargets, s: LiveSettings) => void;
}

const APPLIERS: readonly Applier[] = [
  { fields: ['workerConcurrency'], apply: (t, s) => { t.setWorkerConcurrency(s.workerConcurrency); } },
  { fields: ['resyncPeriodSeconds'], apply: (t, s) => { t.setResyncPeriodSeconds(s.resyncPeriodSeconds); } },
  { fields: ['maxPods'], apply: (t, s) => { t.setMaxPods(s.maxPods); } },
  { fields: ['paused'], apply: (t, s) => { t.setPaused(s.paused); } },
  { fields: ['logLevel'], apply: (t, s) => { t.setLogLevel(s.logLevel); } },
  { fields: ['clusterDNS'], apply: (t, s) => { t.setClusterDNS(s.clusterDNS); } },
  { fields: ['clusterDomain'], apply: (t, s) => { t.setClusterDomain(s.clusterDomain); } },
  { fields: ['gc'], apply: (t, s) => { t.setGc(s.gc); } },
  { fields: ['logRotation'], apply: (t, s) => { t.setLogRotation(s.logRotation); } },
  { fields: ['crashLoopBackOff'], apply: (t, s) => { t.setCrashLoopBackOff(s.crashLoopBackOff); } },
  { fields: ['imagePulls'], apply: (t, s) => { t.setImagePulls(s.imagePulls); } },
  { fields: ['systemReserved', 'kubeReserved'], apply: (t, s) => { t.setReserved({ systemReserved: s.systemReserved, kubeReserved: s.kubeReserved }); } },
  { fields: ['eviction'], apply: (t, s) => { t.setEviction(s.eviction); } },
];

function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Equal values, deeply: lists (clusterDNS) element by element, groups (gc, eviction and its maps) field by field, so an unchanged one is not applied again. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => sameValue(a[k], b[k]));
  }
  return a === b;
}

/** The live settings known to be in effect; a field is absent until a setter succeeded for it. */
export type AppliedSettings = Partial<Pick<LiveSettings, LiveField>>;

/** The outcome of {@link applySettings}. */
export interface ApplyOutcome {
  /** What is in effect now: `next`'s value for every field applied, the earlier value where the setter failed. */
  readonly applied: AppliedSettings;
  /** Fields whose value changed and was applied, as `spec.<field>`. */
  readonly changed: readonly string[];
  readonly failures: readonly SettingProblem[];
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Applies every field of `next` that differs from what is known to be in effect (all of them on the
 * first apply after start, when `applied` is empty). A failed field stays different, so the next
 * apply tries it again.
 */
export function applySettings(applied: AppliedSettings, next: LiveSettings, targets: SettingsTargets): ApplyOutcome {
  let inEffect = applied;
  const changed: string[] = [];
  const failures: SettingProblem[] = [];
  for (const { fields, apply } of APPLIERS) {
    const differing = fields.filter((field) => !sameValue(applied[field], next[field]));
    if (differing.length === 0) continue;
    try {
      apply(targets, next);
      for (const field of fields) inEffect = { ...inEffect, [field]: next[field] };
      changed.push(...differing.map((field) => `spec.${field}`));
    } catch (err: unknown) {
      failures.push(...differing.map((field) => ({ field: `spec.${field}`, message: errorText(err) })));
    }
  }
  return { applied: inEffect, changed, failures };
}
