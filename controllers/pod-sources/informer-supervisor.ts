/**
 * Keeps one pod informer running: replaces it with a fresh one (full relist) after an error, with
 * capped exponential backoff, or when its watch has been silent too long. Each informer carries a
 * generation number; events from a replaced one are dropped. See api-source.ts for the contract.
 */
import type { Informer, KubernetesListObject, ListPromise, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { PodTransport } from './pod-watch.js';

/** A list from an informer that was replaced while it listed; it must not go on to watch. */
export class StaleInformerError extends Error {
  override readonly name = 'StaleInformerError';
  constructor() {
    super('pod informer was replaced while listing');
  }
}

/** True when `err` is a {@link StaleInformerError}. */
export function isStaleInformerError(err: unknown): err is StaleInformerError {
  return err instanceof StaleInformerError;
}

/** What the supervisor knows about sync and liveness, shared with the pod source. */
export interface SupervisorState {
  everSynced: boolean;
  syncedSinceError: boolean;
  syncedAt: number | undefined;
  lastActivityAt: number;
  markSynced(): void;
  markActive(): void;
  /** Milliseconds since the last sign of life. */
  silentMs(): number;
}

/** Fresh state: never synced, active as of now. */
export function createSupervisorState(clock: Clock): SupervisorState {
  const state: SupervisorState = {
    everSynced: false,
    syncedSinceError: false,
    syncedAt: undefined,
    lastActivityAt: clock.now(),
    markSynced() {
      state.everSynced = true;
      state.syncedSinceError = true;
      state.syncedAt = clock.now();
      state.lastActivityAt = clock.now();
    },
    markActive() {
      state.lastActivityAt = clock.now();
    },
    silentMs: () => clock.now() - state.lastActivityAt,
  };
  return state;
}

/** Options of {@link createInformerSupervisor}. */
export interface SupervisorOptions {
  readonly transport: PodTransport;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly backoff: BackoffPolicy;
  /** A number in [0, 1) for the backoff's jitter. */
  readonly random: () => number;
  readonly silenceTimeoutMs: number;
  readonly state: SupervisorState;
  readonly handlers: InformerHandlers;
}

/** Where informer output goes: a full list, or one changed or deleted pod. */
export interface InformerHandlers {
  applyList(items: readonly V1Pod[]): void;
  applyUpsert(pod: V1Pod): void;
  applyDelete(pod: V1Pod): void;
}

/** A running supervisor. */
export interface InformerSupervisor {
  start(): Promise<void>;
  stop(): void;
  healthy(): boolean;
}

/** Routes one informer's events to the handlers while it is the current one. */
function attachHandlers(
  informer: Informer<V1Pod>,
  isCurrent: () => boolean,
  handlers: InformerHandlers & { onError(err: unknown): void },
): void {
  informer.on('add', (pod) => {
    if (isCurrent()) handlers.applyUpsert(pod);
  });
  informer.on('update', (pod) => {
    if (isCurrent()) handlers.applyUpsert(pod);
  });
  informer.on('delete', (pod) => {
    if (isCurrent()) handlers.applyDelete(pod);
  });
  informer.on('error', (err: unknown) => {
    if (isCurrent()) handlers.onError(err);
  });
}

/**
 * The informer's list function: applies each full list to the handlers before the informer fills its
 * own cache. A list that returns after its informer was replaced throws, so that informer never
 * goes on to open a watch.
 */
function listerFor(transport: PodTransport, handlers: InformerHandlers, isCurrent: () => boolean): ListPromise<V1Pod> {
  return async (): Promise<KubernetesListObject<V1Pod>> => {
    const list = await transport.list();
    if (!isCurrent()) throw new StaleInformerError();
    handlers.applyList(list.items);
    return list;
  };
}

/**
 * Counts failures in a row. A sync that held for the whole backoff cap before an error forgives the
 * count once; later errors without a new sync keep doubling (an outage that began after hours of
 * health still backs off).
 */
function createRestartBackoff(policy: BackoffPolicy, clock: Clock, state: SupervisorState, random: () => number): () => { failures: number; delayMs: number } {
  let failures = 0;
  let forgivenSync: number | undefined;
  return () => {
    const syncedAt = state.syncedAt;
    if (syncedAt !== undefined && syncedAt !== forgivenSync && clock.now() - syncedAt >= policy.maxMs) {
      failures = 0;
      forgivenSync = syncedAt;
    }
    failures += 1;
    return { failures, delayMs: backoffDelay(policy, failures, random) };
  };
}

/** Creates a stopped supervisor. */
export function createInformerSupervisor(options: SupervisorOptions): InformerSupervisor {
  const { transport, logger, clock, state, handlers } = options;
  let generation = 0;
  let informer: Informer<V1Pod> | undefined;
  let restartTimer: TimerHandle | undefined;
  let watchdogLoop: PeriodicLoop | undefined;
  let stopped = true;
  const nextRestart = createRestartBackoff(options.backoff, clock, state, options.random);
  const watchdogPeriodMs = Math.max(1000, options.silenceTimeoutMs / 4);

  const isCurrent = (gen: number): boolean => gen === generation && !stopped;
  const silent = (): boolean => state.silentMs() > options.silenceTimeoutMs;

  function retire(): void {
    generation += 1;
    const old = informer;
    informer = undefined;
    if (old) void old.stop();
  }

  async function launch(): Promise<void> {
    retire();
    const gen = generation;
    const live = (): boolean => isCurrent(gen);
    const current = transport.informer({
      listPods: listerFor(transport, handlers, live),
      onActivity: () => {
        if (live()) state.markActive();
      },
      isCurrent: live,
    });
    informer = current;
    attachHandlers(current, live, { ...handlers, onError });
    try {
      await current.start();
    } catch (err: unknown) {
      if (live()) onError(err);
    }
    // Replaced while starting: the watch it may just have opened must be closed now.
    if (!live()) await current.stop();
  }

  function scheduleRestart(delayMs: number): void {
    if (restartTimer !== undefined || stopped) return;
    restartTimer = clock.setTimeout(() => {
      restartTimer = undefined;
      void launch();
    }, delayMs);
  }

  function onError(err: unknown): void {
    state.syncedSinceError = false;
    retire();
    const { failures, delayMs } = nextRestart();
    logger.warn({ err, failures, retryInMs: delayMs }, 'pod informer failed; restarting with a full relist');
    scheduleRestart(delayMs);
  }

  /** Replaces a silent informer. Never awaits the launch: a hung list must not stall the watchdog. */
  function watchdog(): void {
    if (restartTimer !== undefined || !silent()) return;
    logger.warn({ silentForMs: state.silentMs() }, 'pod watch silent; restarting with a full relist');
    state.syncedSinceError = false;
    state.markActive();
    void launch();
  }

  return {
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      state.markActive();
      watchdogLoop = createPeriodicLoop({ name: 'pod-watch-watchdog', periodMs: watchdogPeriodMs, firstRun: 'after-period', clock, logger, run: watchdog });
      watchdogLoop.start();
      await launch();
    },
    stop(): void {
      stopped = true;
      retire();
      clock.clearTimeout(restartTimer);
      restartTimer = undefined;
      // The watchdog's run is synchronous: nothing is in flight to wait for.
      void watchdogLoop?.stop();
      watchdogLoop = undefined;
    },
    healthy(): boolean {
      return !stopped && informer !== undefined && restartTimer === undefined && state.syncedSinceError && !silent();
    },
  };
}
