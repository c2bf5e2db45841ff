/**
 * The eviction manager, as the kubelet's (`pkg/kubelet/eviction/eviction_manager.go` synchronize),
 * every 10 s:
 *
 *   observe signals ─► thresholds met (min reclaim, grace periods) ─► node conditions (transition period)
 *        └─► the threshold to act on ─► disk: container and image GC first, observe again
 *                 └─► still met: rank the active pods ─► evict the first that is not critical
 *
 * - First, whatever the pressure, local storage limits (`local-storage.ts`): every pod over an
 *   emptyDir `sizeLimit` or an `ephemeral-storage` limit is evicted (grace 1 s, no DisruptionTarget,
 *   as the kubelet's `localStorageEviction`), and the round ends there once it evicted any.
 * - Otherwise at most one pod per round, as the kubelet; the round then waits (up to 30 s) for the pod to be
 *   cleaned up, so the next round (10 s later, or one asked for meanwhile) sees what it freed.
 * - Evicting records the decision (reason `Evicted`, the kubelet's message, grace 0 for a hard
 *   threshold, `maxPodGracePeriodSeconds` capped by the pod's own for a soft one) and requests the
 *   pod's sync: the reconciler kills it through the one kill path and writes its Failed status.
 * - A change of conditions is reported at once (the node controller posts the Node, so admission,
 *   which reads the Node, refuses pods under pressure from then on).
 * - The signals, the pods' usage and the removal of pods are injected (the agent wires the node's
 *   cgroup and statfs readings, CRI stats and the pod lifecycle); the decisions are the pure
 *   functions of `thresholds.ts`, `signals.ts`, `ranking.ts`.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { EVICTED_REASON, isCriticalPod } from '../../reconcilers/admission/index.js';
import type { NodeKill } from '../../reconcilers/lifecycle/evictions.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { podDisplayName, podKeyOf, type PodKey } from '../../util/pod-key.js';
import { LOCAL_STORAGE_GRACE_SECONDS, localStorageViolation, type LocalStorageUsage } from './local-storage.js';
import { evictionMessage, rankForEviction, type PodUsage } from './ranking.js';
import { evaluateRound, INITIAL_EVICTION_STATE, isDiskSignal, thresholdsMet, thresholdToReclaim, type EvictionState, type Observations, type PressureCondition } from './signals.js';
import { parseThresholds, type EvictionConfig, type Threshold } from './thresholds.js';
import { NodePressureState, type MemoryAndStorageBytes } from './node-pressure-state.js';

/** The kubelet's monitoring interval. */
export const EVICTION_PERIOD_MS = 10_000;
/** How long a round waits for its victim to be cleaned up (the kubelet's podCleanupTimeout), and how often it looks. */
export const POD_CLEANUP_TIMEOUT_MS = 30_000;
const POD_CLEANUP_POLL_MS = 1000;

/** Node-level reclaim for disk signals (the garbage collector). */
export interface NodeReclaimer {
  /** Container GC now; true when it succeeded. */
  runContainerGcNow(): Promise<boolean>;
  /** Image GC now; true when it succeeded. */
  runImageGcNow(): Promise<boolean>;
}

/** What the manager reads and whom it tells. */
export interface EvictionManagerDeps {
  readonly config: EvictionConfig;
  /** The node's signals now (cgroups, statfs, the image filesystem, PIDs). */
  readonly observe: () => Promise<Observations>;
  /** The pods that may be evicted: admitted, running, not terminating. */
  readonly activePods: () => readonly V1Pod[];
  /** Their usage (CRI stats, emptyDir sizes). */
  readonly usage: (pods: readonly V1Pod[]) => Promise<PodUsage[]>;
  /**
   * The local storage of those that limit it (emptyDir `sizeLimit`, `ephemeral-storage` limits),
   * and whether the image filesystem is a separate one (then writable layers do not count against
   * a container's limit). Absent: local storage limits are not enforced.
   */
  readonly localStorage?: (pods: readonly V1Pod[]) => Promise<{ readonly usage: readonly LocalStorageUsage[]; readonly dedicatedImageFs: boolean }>;
  readonly reclaimer: NodeReclaimer;
  /** Records the decision and requests the pod's sync; false when the pod was already decided. */
  readonly evict: (key: PodKey, kill: NodeKill) => boolean;
  /**
   * Whether an evicted pod is cleaned up (nothing runs, volumes removed): the round waits for it,
   * as the kubelet's waitForPodsCleanup, so the next round sees what the eviction freed. Absent:
   * no wait.
   */
  readonly podCleanedUp?: (key: PodKey) => boolean;
  /** The Warning event on the evicted pod. */
  readonly recordEvent?: (pod: V1Pod, message: string) => void;
  /** The conditions changed: post the Node now. */
  readonly onConditionsChanged: (conditions: readonly PressureCondition[]) => void;
  /** A pod was evicted for a signal, or a local storage limit (`emptydirfs.limit`, …): the metrics' counter. */
  readonly onEvicted?: (signal: string) => void;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly periodMs?: number;
  /** Where the manager's conditions and thresholds are told to the Node; a cell of its own when absent. */
  readonly pressure?: NodePressureState;
}

export class EvictionManager {
  private config: EvictionConfig;
  private thresholds: Threshold[];
  private state: EvictionState = INITIAL_EVICTION_STATE;
  private readonly pressure: NodePressureState;
  private stopping = false;
  private readonly loop: PeriodicLoop;

  /** @throws InvalidThresholdError when the configuration does not parse. */
  constructor(private readonly deps: EvictionManagerDeps) {
    this.config = deps.config;
    this.thresholds = parseThresholds(deps.config);
    this.pressure = deps.pressure ?? new NodePressureState(this.thresholds);
    this.pressure.setThresholds(this.thresholds);
    this.loop = createPeriodicLoop({ name: 'eviction', periodMs: deps.periodMs ?? EVICTION_PERIOD_MS, clock: deps.clock, logger: deps.logger, firstRun: 'now', run: async () => {
        await this.synchronize();
      } });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops the rounds; a round waiting for its victim's cleanup ends at its next look (the agent's stop is not held up). */
  stop(): Promise<void> {
    this.stopping = true;
    return this.loop.stop();
  }

  /** Applies new settings (NodeAgent `spec.eviction`) and runs a round with them. @throws InvalidThresholdError. */
  setConfig(config: EvictionConfig): void {
    this.thresholds = parseThresholds(config);
    this.config = config;
    this.pressure.setThresholds(this.thresholds);
    void this.loop.runNow();
  }

  currentConfig(): EvictionConfig {
    return this.config;
  }

  conditions(): readonly PressureCondition[] {
    return this.pressure.conditions();
  }

  reservedBytes(capacity: MemoryAndStorageBytes): MemoryAndStorageBytes {
    return this.pressure.reservedBytes(capacity);
  }

  /** Runs a round now (after one in flight); true when it succeeded. */
  runNow(): Promise<boolean> {
    return this.loop.runNow();
  }

  /** One round; returns the pod evicted, if any. */
  async synchronize(): Promise<V1Pod | undefined> {
    const observations = await this.deps.observe();
    const round = evaluateRound({ thresholds: this.thresholds, observations, previous: this.state, nowMs: this.deps.clock.now(), transitionPeriodMs: this.config.pressureTransitionPeriodSeconds * 1000 });
    this.state = round.state;
    this.updateConditions(round.conditions, observations);
    const overLimits = await this.localStorageEviction();
    if (overLimits.length > 0) {
      for (const pod of overLimits) await this.waitForCleanup(podKeyOf(pod));
      return overLimits[0];
    }
    const threshold = thresholdToReclaim(round.acting);
    if (threshold === undefined) return undefined;
    this.deps.logger.info({ signal: threshold.signal, threshold: threshold.value.text, observation: observations.get(threshold.signal) }, 'eviction: threshold met, attempting to reclaim');
    if (isDiskSignal(threshold.signal) && (await this.reclaimedByGc(threshold))) return undefined;
    return this.evictOne(threshold, observations);
  }

  private updateConditions(conditions: readonly PressureCondition[], observations: Observations): void {
    const current = this.pressure.conditions();
    if (conditions.join() === current.join()) return;
    this.deps.logger.info({ from: current, to: conditions, observations: Object.fromEntries(observations) }, 'eviction: node pressure conditions changed');
    this.pressure.setConditions(conditions);
    this.deps.onConditionsChanged(conditions);
  }

  /** Container and image GC first; true when the threshold is no longer met afterwards. */
  private async reclaimedByGc(threshold: Threshold): Promise<boolean> {
    await this.deps.reclaimer.runContainerGcNow();
    await this.deps.reclaimer.runImageGcNow();
    const after = await this.deps.observe();
    if (thresholdsMet([threshold], after, true).length > 0) return false;
    this.deps.logger.info({ signal: threshold.signal, observation: after.get(threshold.signal) }, 'eviction: node-level reclaim (container and image GC) relieved the pressure; no pod evicted');
    return true;
  }

  private async evictOne(threshold: Threshold, observations: Observations): Promise<V1Pod | undefined> {
    const pods = this.deps.activePods();
    const ranked = rankForEviction(threshold.signal, await this.deps.usage(pods));
    this.deps.logger.info({ signal: threshold.signal, ranked: ranked.map((u) => podDisplayName(podKeyOf(u.pod))) }, 'eviction: pods ranked for eviction');
    for (const usage of ranked) {
      if (isCriticalPod(usage.pod)) continue;
      const message = evictionMessage(threshold, observations.get(threshold.signal), usage);
      const kill: NodeKill = { reason: EVICTED_REASON, message, gracePeriodSeconds: this.gracePeriodFor(threshold, usage.pod) };
      if (!this.deps.evict(podKeyOf(usage.pod), kill)) continue;
      this.deps.logger.warn({ pod: podDisplayName(podKeyOf(usage.pod)), signal: threshold.signal, gracePeriodSeconds: kill.gracePeriodSeconds, message }, 'eviction: evicting pod');
      this.deps.recordEvent?.(usage.pod, message);
      this.deps.onEvicted?.(threshold.signal);
      await this.waitForCleanup(podKeyOf(usage.pod));
      return usage.pod;
    }
    this.deps.logger.warn({ signal: threshold.signal }, 'eviction: no pod could be evicted');
    return undefined;
  }

  /** Evicts every active pod over a local storage limit; returns them. */
  private async localStorageEviction(): Promise<V1Pod[]> {
    if (this.deps.localStorage === undefined) return [];
    const { usage, dedicatedImageFs } = await this.deps.localStorage(this.deps.activePods());
    const evicted: V1Pod[] = [];
    for (const pod of usage) {
      const violation = localStorageViolation(pod, { dedicatedImageFs });
      if (violation === undefined || isCriticalPod(pod.pod)) continue;
      const kill: NodeKill = { reason: EVICTED_REASON, message: violation.message, gracePeriodSeconds: LOCAL_STORAGE_GRACE_SECONDS, disruptionTarget: false };
      if (!this.deps.evict(podKeyOf(pod.pod), kill)) continue;
      this.deps.logger.warn({ pod: podDisplayName(podKeyOf(pod.pod)), signal: violation.signal, message: violation.message }, 'eviction: evicting pod over a local storage limit');
      this.deps.recordEvent?.(pod.pod, violation.message);
      this.deps.onEvicted?.(violation.signal);
      evicted.push(pod.pod);
    }
    return evicted;
  }

  /** Waits until the evicted pod is cleaned up, at most {@link POD_CLEANUP_TIMEOUT_MS}. */
  private async waitForCleanup(key: PodKey): Promise<void> {
    const { podCleanedUp, clock } = this.deps;
    if (podCleanedUp === undefined) return;
    const deadline = clock.now() + POD_CLEANUP_TIMEOUT_MS;
    while (!this.stopping && !podCleanedUp(key)) {
      if (clock.now() >= deadline) {
        this.deps.logger.warn({ pod: podDisplayName(key), timeoutMs: POD_CLEANUP_TIMEOUT_MS }, 'eviction: the evicted pod was not cleaned up in time');
        return;
      }
      await new Promise<void>((resolve) => clock.setTimeout(resolve, POD_CLEANUP_POLL_MS));
    }
  }

  /** Hard thresholds kill at once; soft ones give `maxPodGracePeriodSeconds`, at most the pod's own. */
  private gracePeriodFor(threshold: Threshold, pod: V1Pod): number {
    if (threshold.gracePeriodMs === 0) return 0;
    return Math.min(this.config.maxPodGracePeriodSeconds, pod.spec?.terminationGracePeriodSeconds ?? 30);
  }
}
