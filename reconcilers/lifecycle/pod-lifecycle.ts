/**
 * The pod lifecycle kernel: one record per pod UID on this node, moved forward by the reconciler,
 * and the registry of per-pod managers that hear every move (the kubelet's pod workers, in our
 * terms). It decides nothing about containers; it keeps the facts that must hold across
 * reconciles of one pod and tells the managers.
 *
 * ```
 *   admit ──► syncing ──terminate(grace)──► terminating ──terminated()──► terminated ──forget()──► (no record)
 *     │          │ sandboxStarted / containerStarted        │ terminate(shorter grace)      │
 *     │          ▼                                          ▼                               ▼
 *   podAdmitted  managers                         podTerminating (once)          podTerminated (once)   podForgotten
 *
 *   requestRestart() in any phase ─► restartRequested (a flag until forget): the reconciler takes the
 *   pod on to terminated and removed(); housekeeping forgets it, then admits the UID afresh ─► admit …
 * ```
 *
 * Invariants:
 * - Monotonic: syncing → terminating → terminated. A UID that started terminating never syncs
 *   again (`admit` answers false) until it is forgotten, so a finished pod never starts again,
 *   even before the API shows its terminal phase.
 * - A grace period can only shrink: `terminate` keeps the shortest grace seen for the UID.
 * - `terminatingAt` and `terminatedAt` are set once, from the injected clock.
 * - `removedAt` (set once, only on a terminated pod) says this process removed every sandbox and
 *   container of the pod from the runtime. Nothing of it can come back: only a syncing pod gets
 *   sandboxes, and a terminated one never syncs again. `objectDeletedAt` (set once, only on a
 *   removed pod) says this process then deleted its API object.
 * - `restartRequested` (set only on a known UID, cleared only by `forget`) says a pod source
 *   delivered the UID again after removing it (the kubelet's `restartRequested`, set when its pod
 *   worker sees a create for a UID whose termination was requested). A record with it never syncs
 *   again either (`admit` answers false, even while syncing): the pod as it ran stops and is
 *   removed, and only a forgotten UID runs anew, so the old and the new run never overlap.
 * - `forget` is the only way a record goes, and it always tells the managers (idempotent), so a
 *   pod that vanished while the agent was down is still forgotten by every manager.
 * - Impossible moves (a terminated pod admitted again, `terminated` before `terminate`) are
 *   programmer errors: logged at error level and ignored, never thrown into a reconcile.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver, PodStartEvents, StartedContainer } from './observer.js';

export type PodLifecyclePhase = 'syncing' | 'terminating' | 'terminated';

/** What the kernel knows of one pod. */
export interface PodLifecycleRecord {
  readonly key: PodKey;
  readonly phase: PodLifecyclePhase;
  readonly admittedAt?: number;
  readonly terminatingAt?: number;
  readonly terminatedAt?: number;
  /** When this process removed the terminated pod's last sandbox and container from the runtime. */
  readonly removedAt?: number;
  /** When this process deleted the removed pod's API object (UID precondition): its events ask for nothing any more. */
  readonly objectDeletedAt?: number;
  /** The shortest grace period asked for since termination began. */
  readonly gracePeriodSeconds?: number;
  /**
   * A pod source delivered the UID again after removing it: once the pod as it ran has terminated
   * and been removed here, housekeeping forgets the UID and admits it afresh (a restart).
   */
  readonly restartRequested?: boolean;
}

export interface PodLifecycleOptions {
  readonly clock: Clock;
  readonly logger: Logger;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export class PodLifecycle implements PodStartEvents {
  private readonly records = new Map<string, Mutable<PodLifecycleRecord>>();
  private readonly observers = new Set<PodLifecycleObserver>();

  constructor(private readonly options: PodLifecycleOptions) {}

  /** Adds a per-pod manager; returns a function that removes it. */
  register(observer: PodLifecycleObserver): () => void {
    this.observers.add(observer);
    return () => {
      this.observers.delete(observer);
    };
  }

  /** The record of a UID, if the kernel has one. */
  get(uid: string): PodLifecycleRecord | undefined {
    const record = this.records.get(uid);
    return record === undefined ? undefined : { ...record };
  }

  /** Every record (copies), for the node's pod counts (`kubelet_working_pods`). */
  list(): PodLifecycleRecord[] {
    return [...this.records.values()].map((record) => ({ ...record }));
  }

  /** UIDs with a record. */
  size(): number {
    return this.records.size;
  }

  /** The pods this process removed from the runtime (`removedAt` set) that are not forgotten yet. */
  removedKeys(): PodKey[] {
    return [...this.records.values()].filter((record) => record.removedAt !== undefined).map((record) => record.key);
  }

  /**
   * The pod is to run. The first call for a UID creates its record and tells the managers; later
   * calls do nothing. Returns false when the UID already started terminating, or is to restart:
   * it must not run (again) before it is forgotten.
   */
  admit(key: PodKey): boolean {
    const record = this.records.get(key.uid);
    if (record !== undefined) return record.phase === 'syncing' && record.restartRequested !== true;
    this.records.set(key.uid, { key, phase: 'syncing', admittedAt: this.options.clock.now() });
    this.notify('podAdmitted', (o) => o.podAdmitted?.(key));
    return true;
  }

  sandboxStarted(key: PodKey, sandboxId: string): void {
    this.notify('sandboxStarted', (o) => o.sandboxStarted?.(key, sandboxId));
  }

  containerStarted(key: PodKey, container: StartedContainer): void {
    this.notify('containerStarted', (o) => o.containerStarted?.(key, container));
  }

  /**
   * The pod must stop, within `gracePeriodSeconds`. The first call moves it to terminating and
   * tells the managers; every call returns the effective grace period, which only shrinks and is
   * never below 1 s.
   */
  terminate(key: PodKey, gracePeriodSeconds: number): number {
    const record = this.records.get(key.uid) ?? { key, phase: 'syncing' as const };
    this.records.set(key.uid, record);
    // As the kubelet's pod worker: "no matter what, we always supply a grace period of 1". A pod
    // deleted with --grace-period=0 --force still gets its preStop hooks, bounded by 1 s.
    const grace = Math.max(1, Math.min(gracePeriodSeconds, record.gracePeriodSeconds ?? Number.POSITIVE_INFINITY));
    record.gracePeriodSeconds = grace;
    if (record.phase === 'syncing') {
      record.phase = 'terminating';
      record.terminatingAt = this.options.clock.now();
      this.notify('podTerminating', (o) => o.podTerminating?.(key, grace));
    }
    return grace;
  }

  /** The current (shortest) grace period of a terminating pod; undefined when it is not terminating. */
  gracePeriodSeconds(uid: string): number | undefined {
    return this.records.get(uid)?.gracePeriodSeconds;
  }

  /** Nothing of the pod runs any more. Tells the managers once. */
  terminated(key: PodKey): void {
    const record = this.records.get(key.uid);
    if (record?.phase === 'terminated') return;
    if (record?.phase !== 'terminating') {
      this.options.logger.error({ podUID: key.uid, phase: record?.phase }, 'programmer error: pod terminated without terminating first');
      this.terminate(key, 0);
      this.terminated(key);
      return;
    }
    record.phase = 'terminated';
    record.terminatedAt = this.options.clock.now();
    this.notify('podTerminated', (o) => o.podTerminated?.(key));
  }

  /**
   * A pod source delivered the UID again after it removed it (an add, not a first sighting: a
   * restarted agent has no record yet), as the kubelet's pod worker flags `restartRequested` on a
   * create for a UID whose termination was requested. Sets `restartRequested` (idempotent) and
   * returns true; returns false, changing nothing, when the kernel has no record of the UID (the
   * pod is simply admitted). No manager is told: the pod's phase is unchanged, the reconciler
   * stops it from here on.
   */
  requestRestart(key: PodKey): boolean {
    const record = this.records.get(key.uid);
    if (record === undefined) return false;
    record.restartRequested = true;
    return true;
  }

  /**
   * Every sandbox and container of the terminated pod was removed from the runtime. No manager is
   * told (the pod's state is unchanged); a record that is not terminated is left alone.
   */
  removed(key: PodKey): void {
    const record = this.records.get(key.uid);
    if (record?.phase !== 'terminated') {
      this.options.logger.error({ podUID: key.uid, phase: record?.phase }, 'programmer error: pod removed from the runtime before it terminated');
      return;
    }
    record.removedAt ??= this.options.clock.now();
  }

  /**
   * This process deleted the API object of the removed pod. No manager is told; a record that is not
   * removed is left alone.
   */
  objectDeleted(key: PodKey): void {
    const record = this.records.get(key.uid);
    if (record?.removedAt === undefined) {
      this.options.logger.error({ podUID: key.uid, phase: record?.phase }, 'programmer error: pod object deleted before the pod was removed from the runtime');
      return;
    }
    record.objectDeletedAt ??= this.options.clock.now();
  }

  /**
   * The pod is gone from every source and the runtime, or it was removed here for its restart:
   * drops the record (restart request included) and tells every manager.
   */
  forget(key: PodKey): void {
    this.records.delete(key.uid);
    this.notify('podForgotten', (o) => o.podForgotten?.(key));
  }

  private notify(what: string, call: (observer: PodLifecycleObserver) => void): void {
    for (const observer of this.observers) {
      try {
        call(observer);
      } catch (err: unknown) {
        this.options.logger.error({ err, callback: what }, 'pod lifecycle observer threw');
      }
    }
  }
}
