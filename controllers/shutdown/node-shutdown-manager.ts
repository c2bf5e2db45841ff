/**
 * Graceful node shutdown (the kubelet's nodeshutdown manager on Linux): while the node runs, hold
 * a logind `delay` inhibitor lock on shutdown, long enough for every shutdown group (logind's
 * `InhibitDelayMaxSec` is raised when shorter); when logind says `PrepareForShutdown(true)`, mark
 * the node shutting down (Ready false "node is shutting down", new pods refused `NodeShutdown`),
 * stop the pods group by group in ascending priority, each pod with its group's period or its own
 * shorter grace, each reported `Failed`, reason `Terminated`, with a `DisruptionTarget` condition,
 * then release the lock so the host goes on. `PrepareForShutdown(false)` (a cancelled shutdown)
 * clears the mark and takes the lock again. A lost bus is reconnected every second.
 *
 * Differences from the kubelet, each on purpose: a first connection that fails is retried like a
 * later one (the kubelet gives up until restarted), and the drop-in is nodelet's own file.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { NodeKill } from '../../reconcilers/lifecycle/evictions.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { podKeyOf, podDisplayName, type PodKey } from '../../util/pod-key.js';
import type { InhibitLock, Logind } from './logind.js';
import { groupPodsByPriority, periodRequestedSeconds, podShutdownGraceSeconds, type PodShutdownGroup, type ShutdownGroupPeriod } from './shutdown-plan.js';
import type { NodeShutdownState } from './shutdown-state.js';

/** The kubelet's words on the pod. */
export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** The kubelet's Node event reason (events.NodeShutdown) and messages. */
export const NODE_SHUTDOWN_EVENT = 'Shutdown';

const RECONNECT_MS = 1_000;
const POD_POLL_MS = 250;
/** The kubelet's wait for logind to take a raised delay: 100 ms doubling, 5 tries. */
const DELAY_RELOAD_BACKOFF = { firstMs: 100, factor: 2, tries: 5 };

/** The pods the manager stops, through the node's one kill path. */
export interface ShutdownPods {
  /** Admitted pods not yet terminating or finished (the kubelet's active pods). */
  activePods(): readonly V1Pod[];
  /** Records the node's decision to stop the pod and wakes its worker; false when it was decided already. */
  kill(key: PodKey, kill: NodeKill): boolean;
  /** True once the pod's containers are stopped and its volumes torn down (or it is gone). */
  cleanedUp(key: PodKey): boolean;
}

/** What the manager is built with. */
export interface NodeShutdownManagerDeps {
  /** Not empty (graceful shutdown off builds no manager). */
  readonly groups: readonly ShutdownGroupPeriod[];
  /** A new session with logind (a new bus connection). */
  readonly connect: (signal: AbortSignal) => Promise<Logind>;
  readonly pods: ShutdownPods;
  readonly state: NodeShutdownState;
  /** Posts the Node's status now (Ready false while shutting down). */
  readonly refreshNodeStatus: () => Promise<unknown>;
  /** Records a Normal event on the Node. */
  readonly recordNodeEvent: (reason: string, message: string) => void;
  /** The kubelet's `graceful_node_shutdown_state` file under the root dir. */
  readonly stateFile: string;
  readonly metrics?: GracefulShutdownMetrics;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** `kubelet_graceful_shutdown_start_time_seconds` and `…_end_time_seconds`. */
export interface GracefulShutdownMetrics {
  started(epochSeconds: number): void;
  ended(epochSeconds: number): void;
}

/** The persisted times of the last graceful shutdown (RFC 3339, as the kubelet's JSON). */
interface ShutdownTimes {
  readonly startTime?: string;
  readonly endTime?: string;
}

/** Logind's delay stayed below what the groups need after a reload. */
export class InhibitDelayTooShortError extends Error {
  override readonly name = 'InhibitDelayTooShortError';
}

export class NodeShutdownManager {
  private readonly abort = new AbortController();
  private session: Logind | undefined;
  private lock: InhibitLock | undefined;
  private events: Promise<void> = Promise.resolve();
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastError = '';

  constructor(private readonly deps: NodeShutdownManagerDeps) {}

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Starts holding the lock and watching for shutdown; returns at once. */
  start(): void {
    this.running ??= this.run();
    this.running.catch((error: unknown) => { this.deps.logger.error({ err: error }, 'node shutdown manager stopped'); });
    void this.restoreMetrics();
  }

  /** Closes the session (the lock is released with it: an agent that stops no longer holds the host). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    this.session?.close();
    await this.running;
    await this.events;
    // A cancellation handled while stopping may have taken the lock again.
    this.releaseLock();
  }

  private async run(): Promise<void> {
    for (;;) {
      try {
        await this.runSession();
        this.lastError = '';
      } catch (error) {
        this.logSessionError(error);
      }
      this.releaseLock();
      if (this.stopped) return;
      await this.sleep(RECONNECT_MS);
    }
  }

  /** One bus connection: delay checked, lock taken, shutdown watched until the bus goes. */
  private async runSession(): Promise<void> {
    const logind = await this.deps.connect(this.abort.signal);
    this.session = logind;
    try {
      await this.ensureInhibitDelay(logind);
      await this.acquireLock(logind);
      await logind.watchShutdown((shuttingDown) => { this.enqueueEvent(logind, shuttingDown); });
      this.deps.logger.info({ periodRequestedSeconds: periodRequestedSeconds(this.deps.groups), groups: this.deps.groups }, 'watching for node shutdown (logind inhibitor lock held)');
      await logind.ended;
    } finally {
      logind.close();
      this.session = undefined;
    }
  }

  private logSessionError(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (this.stopped) return;
    // Once per distinct failure: a host without logind would otherwise log every second.
    if (message !== this.lastError) this.deps.logger.error({ err: error }, 'cannot watch the node for shutdown events; retrying every second');
    this.lastError = message;
  }

  private async ensureInhibitDelay(logind: Logind): Promise<void> {
    const requestedMs = periodRequestedSeconds(this.deps.groups) * 1000;
    if ((await logind.inhibitDelayMs()) >= requestedMs) return;
    await logind.raiseInhibitDelay(requestedMs / 1000);
    let waitMs = DELAY_RELOAD_BACKOFF.firstMs;
    let current = 0;
    for (let attempt = 1; attempt <= DELAY_RELOAD_BACKOFF.tries; attempt++) {
      await this.sleep(waitMs);
      current = await logind.inhibitDelayMs();
      if (current >= requestedMs) return;
      waitMs *= DELAY_RELOAD_BACKOFF.factor;
    }
    throw new InhibitDelayTooShortError(`logind's InhibitDelayMaxSec stayed ${current / 1000}s after ${DELAY_RELOAD_BACKOFF.tries} tries; the shutdown groups need ${requestedMs / 1000}s`);
  }

  private async acquireLock(logind: Logind): Promise<void> {
    const lock = await logind.inhibitShutdown();
    this.releaseLock();
    this.lock = lock;
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  /** Events are handled one at a time, in order, as the kubelet's loop does. */
  private enqueueEvent(logind: Logind, shuttingDown: boolean): void {
    this.events = this.events.then(() => this.handleEvent(logind, shuttingDown)).catch((error: unknown) => {
      this.deps.logger.error({ err: error }, 'failed to handle a node shutdown event');
    });
  }

  private async handleEvent(logind: Logind, shuttingDown: boolean): Promise<void> {
    this.deps.logger.info({ event: shuttingDown ? 'shutdown' : 'cancelled' }, 'node shutdown event');
    this.deps.recordNodeEvent(NODE_SHUTDOWN_EVENT, shuttingDown ? 'Shutdown manager detected shutdown event' : 'Shutdown manager detected shutdown cancellation');
    this.deps.state.setShuttingDown(shuttingDown);
    if (!shuttingDown) {
      await this.acquireLock(logind);
      void this.deps.refreshNodeStatus().catch(() => undefined);
      return;
    }
    void this.deps.refreshNodeStatus().catch(() => undefined);
    try {
      await this.recordTimes(true);
      await this.stopPods();
    } finally {
      // The end is on record before the lock goes: the host may stop the moment it is released.
      await this.recordTimes(false);
      this.releaseLock();
      this.deps.logger.info('node shutdown: pods handled, lock released; the node will shut down shortly');
    }
  }

  private async stopPods(): Promise<void> {
    for (const group of groupPodsByPriority(this.deps.groups, this.deps.pods.activePods())) {
      if (this.stopped) return;
      if (group.pods.length === 0) continue;
      await this.stopGroup(group);
    }
  }

  /** Stops a group's pods and waits until they are cleaned up or the group's period ends. */
  private async stopGroup(group: PodShutdownGroup): Promise<void> {
    const { pods, clock, logger } = this.deps;
    const keys: PodKey[] = [];
    for (const pod of group.pods) {
      const key = podKeyOf(pod);
      keys.push(key);
      const gracePeriodSeconds = podShutdownGraceSeconds(group, pod);
      logger.info({ pod: podDisplayName(key), gracePeriodSeconds, priority: group.priority }, 'node shutdown: stopping pod');
      pods.kill(key, { reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE, gracePeriodSeconds });
    }
    const deadline = clock.now() + group.shutdownGracePeriodSeconds * 1000;
    while (!this.stopped && keys.some((key) => !pods.cleanedUp(key))) {
      if (clock.now() >= deadline) {
        logger.warn({ priority: group.priority, gracePeriodSeconds: group.shutdownGracePeriodSeconds }, 'node shutdown: the group did not stop within its period');
        return;
      }
      await this.sleep(Math.min(POD_POLL_MS, deadline - clock.now()));
    }
    logger.info({ priority: group.priority, pods: keys.length }, 'node shutdown: group stopped');
  }

  /** The start (or end) of a shutdown, in the state file and the metrics. */
  private async recordTimes(start: boolean): Promise<void> {
    const now = this.deps.clock.now();
    const times: ShutdownTimes = start ? { startTime: new Date(now).toISOString() } : { ...(await this.readTimes()), endTime: new Date(now).toISOString() };
    if (start) {
      this.deps.metrics?.started(Math.floor(now / 1000));
      this.deps.metrics?.ended(0);
    } else this.deps.metrics?.ended(Math.floor(now / 1000));
    try {
      await writeFile(`${this.deps.stateFile}.tmp`, JSON.stringify(times));
      await rename(`${this.deps.stateFile}.tmp`, this.deps.stateFile);
    } catch (error) {
      this.deps.logger.error({ err: error }, 'failed to store the graceful shutdown state');
    }
  }

  private async readTimes(): Promise<ShutdownTimes> {
    try {
      const parsed: unknown = JSON.parse(await readFile(this.deps.stateFile, 'utf8'));
      if (typeof parsed !== 'object' || parsed === null) return {};
      const { startTime, endTime } = parsed as Record<string, unknown>;
      return { ...(typeof startTime === 'string' ? { startTime } : {}), ...(typeof endTime === 'string' ? { endTime } : {}) };
    } catch {
      // Absent or unreadable: no shutdown recorded.
      return {};
    }
  }

  /** After a restart, the gauges show the last shutdown again (the kubelet's setMetrics). */
  private async restoreMetrics(): Promise<void> {
    const { startTime, endTime } = await this.readTimes();
    const seconds = (time: string | undefined): number | undefined => (time === undefined || Number.isNaN(Date.parse(time)) ? undefined : Math.floor(Date.parse(time) / 1000));
    const started = seconds(startTime);
    const ended = seconds(endTime);
    if (started !== undefined) this.deps.metrics?.started(started);
    if (ended !== undefined) this.deps.metrics?.ended(ended);
  }

  private sleep(ms: number): Promise<void> {
    const { clock } = this.deps;
    return new Promise<void>((resolve) => {
      const timer: TimerHandle = clock.setTimeout(() => { this.wake = undefined; resolve(); }, ms);
      this.wake = () => {
        clock.clearTimeout(timer);
        resolve();
      };
    });
  }
}
