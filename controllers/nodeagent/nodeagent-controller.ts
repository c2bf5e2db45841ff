/**
 * The NodeAgent controller: the operator pattern for the node's own NodeAgent, on client-node 2.x
 * (docs/adr/0002-nodeagent-operator-pattern.md says why not `@dot-i/k8s-operator`).
 *
 * - Watch the resource (`watch.ts`: read or create, watch, relist every minute, back off
 *   on errors, never give up).
 * - Reconcile spec → settings: every delivered object is resolved against the agent's flag values
 *   (`settings.ts`) and what changed is applied live (`apply.ts`). Level-
 *   triggered and idempotent: delivering the same object again changes nothing.
 * - Write status through the `status` subresource with optimistic concurrency: a PUT carrying the
 *   resourceVersion last seen; on 409 Conflict, read the object again and retry once. A sample of
 *   the agent's health is taken every `samplePeriodMs`; the status is written when it changed
 *   (condition statuses, counts, the applied generation) or `statusPeriodMs` has passed since the
 *   last write, and at once when a new generation was applied.
 * - Never crash on API errors: failed writes are logged and retried with backoff by the status
 *   loop; the watch recovers on its own. Pods keep being reconciled whatever happens here.
 */
import type { Logger } from 'pino';
import { isConflict } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop } from '../../util/periodic-loop.js';
import { settlesWithin } from '../../util/timeout.js';
import { applySettings, type AppliedSettings, type SettingsTargets } from './apply.js';
import type { NodeAgentApi } from './api.js';
import { resolveSettings, type BaseSettings, type LiveSettings, type SettingProblem } from './settings.js';
import { buildNodeAgentStatus, statusSummary, type HealthSample, type SettingsReport } from './status.js';
import type { NodeAgent, NodeAgentStatus } from './types.js';
import { createNodeAgentWatch } from './watch.js';

/** Options of {@link createNodeAgentController}. */
export interface NodeAgentControllerOptions {
  readonly api: NodeAgentApi;
  /** The Node's name, which is the NodeAgent's. */
  readonly nodeName: string;
  /** What unset spec fields mean: the agent's flag values. */
  readonly base: BaseSettings;
  readonly targets: SettingsTargets;
  /** Samples the agent's health for the status; the NodeAgent watch's own health is added to APIReady. */
  readonly sample: () => Promise<HealthSample>;
  /** Reported as `status.agentVersion`. */
  readonly agentVersion: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Defaults: sample every 2 s, write at least every 10 s, relist the object every 60 s. */
  readonly samplePeriodMs?: number;
  readonly statusPeriodMs?: number;
  readonly relistPeriodMs?: number;
  /** How long `start()` waits for the first spec; default 5 s. */
  readonly firstSyncTimeoutMs?: number;
  /** A number in [0, 1) for the watch's retry jitter; default Math.random. */
  readonly random?: () => number;
}

/** A running NodeAgent controller. */
export interface NodeAgentController {
  /**
   * Starts watching the NodeAgent. Resolves true once its spec was applied, or false after
   * `firstSyncTimeoutMs` (API server unreachable, CRD missing: the flags stay in effect and the
   * spec is applied whenever it can be read). The agent awaits it before reconciling any pod, so a
   * paused node holds its pods from the first reconcile after a restart.
   */
  start(): Promise<boolean>;
  /** Starts writing status (call once the parts it samples run). */
  startReporting(): void;
  /** Stops watching and reporting; settings in effect stay in effect. */
  stop(): Promise<void>;
  /** The settings resolved from the newest spec, undefined before the object was first read. */
  settings(): LiveSettings | undefined;
  /** True while the NodeAgent is watched (read and no error being backed off from). */
  healthy(): boolean;
}

const STATUS_BACKOFF = { initialMs: 1000, maxMs: 30_000 };

/** The spec side: resolves each delivered spec, applies what changed, and remembers the outcome. */
class SpecApplier {
  settings: LiveSettings | undefined;
  report: SettingsReport = { applyFailures: [], invalid: [] };
  generation: number | undefined;
  private applied: AppliedSettings = {};

  constructor(
    private readonly base: BaseSettings,
    private readonly targets: SettingsTargets,
    private readonly logger: Logger,
  ) {}

  /** Applies the object's spec; returns true when its generation is new (news for observers). */
  apply(agent: NodeAgent): boolean {
    const resolution = resolveSettings(agent.spec, this.base);
    const outcome = applySettings(this.applied, resolution.settings, this.targets);
    const generation = agent.metadata.generation;
    const generationChanged = generation !== this.generation;
    this.settings = resolution.settings;
    this.applied = outcome.applied;
    this.generation = generation;
    this.report = { applyFailures: outcome.failures, invalid: resolution.invalid };
    if (outcome.changed.length > 0) this.logger.info({ changed: outcome.changed, generation }, 'applied NodeAgent settings');
    if (generationChanged || outcome.failures.length > 0) this.logProblems(resolution.invalid, outcome.failures);
    return generationChanged;
  }

  private logProblems(invalid: readonly SettingProblem[], failures: readonly SettingProblem[]): void {
    if (invalid.length > 0) this.logger.warn({ invalid }, 'NodeAgent spec has invalid settings; their defaults are used');
    if (failures.length > 0) this.logger.warn({ failures }, 'some NodeAgent settings could not be applied; retrying at the next resync');
  }
}

/** Resolves true once `resolve` was called, or false when `timeoutMs` passes first. */
function firstOrTimeout(clock: Clock, timeoutMs: number): { readonly resolve: () => void; readonly wait: () => Promise<boolean> } {
  let done: () => void = () => undefined;
  const first = new Promise<void>((resolve) => {
    done = resolve;
  });
  return {
    resolve: () => {
      done();
    },
    wait: () => settlesWithin(first, { clock, timeoutMs }),
  };
}

/** Creates a stopped controller; call `start()`, then `startReporting()`. */
export function createNodeAgentController(options: NodeAgentControllerOptions): NodeAgentController {
  const { api, clock } = options;
  const logger = options.logger.child({ component: 'nodeagent' });
  const statusPeriodMs = options.statusPeriodMs ?? 10_000;
  const spec = new SpecApplier(options.base, options.targets, logger);
  let current: NodeAgent | undefined;
  let lastWrite: { readonly atMs: number; readonly summary: string } | undefined;
  let reporting = false;
  const firstSync = firstOrTimeout(clock, options.firstSyncTimeoutMs ?? 5000);

  const onObject = (agent: NodeAgent): void => {
    current = agent;
    // A new generation is news for whoever waits on observedGeneration: report it now.
    if (spec.apply(agent) && reporting) void statusLoop.runNow();
    firstSync.resolve();
  };
  const watch = createNodeAgentWatch({ api, name: options.nodeName, clock, logger: options.logger, onObject, relistPeriodMs: options.relistPeriodMs, random: options.random });

  function statusFor(agent: NodeAgent, sample: HealthSample): NodeAgentStatus {
    const watchFailing = { ready: false, reason: 'NodeAgentWatchFailing', message: 'the NodeAgent cannot be read or watched' };
    return buildNodeAgentStatus({
      sample: { ...sample, api: sample.api.ready && !watch.healthy() ? watchFailing : sample.api },
      settings: spec.report,
      paused: spec.settings?.paused ?? false,
      generation: spec.generation,
      nodeName: options.nodeName,
      agentVersion: options.agentVersion,
      now: new Date(clock.now()),
      previous: agent.status,
    });
  }

  /** PUTs the status with the version last seen; on a conflict reads the object and tries once more. */
  async function writeStatus(agent: NodeAgent, sample: HealthSample): Promise<void> {
    let status = statusFor(agent, sample);
    const due = lastWrite === undefined || clock.now() - lastWrite.atMs >= statusPeriodMs || statusSummary(status) !== lastWrite.summary;
    if (!due) return;
    try {
      current = await api.replaceStatus({ ...agent, status });
    } catch (err: unknown) {
      if (!isConflict(err)) throw err;
      const fresh = await api.get(options.nodeName);
      if (fresh === undefined) return; // deleted: the watch creates it again
      status = statusFor(fresh, sample);
      current = await api.replaceStatus({ ...fresh, status });
    }
    lastWrite = { atMs: clock.now(), summary: statusSummary(status) };
  }

  const statusLoop = createPeriodicLoop({
    name: 'nodeagent-status',
    periodMs: options.samplePeriodMs ?? 2000,
    backoff: STATUS_BACKOFF,
    clock,
    logger,
    run: async () => {
      if (current === undefined) return;
      const sample = await options.sample();
      await writeStatus(current, sample);
    },
  });

  return {
    async start(): Promise<boolean> {
      watch.start();
      const synced = await firstSync.wait();
      if (!synced) logger.warn('NodeAgent not read yet; running with the flag values until it can be');
      return synced;
    },
    startReporting(): void {
      reporting = true;
      statusLoop.start();
    },
    async stop(): Promise<void> {
      await Promise.all([watch.stop(), statusLoop.stop()]);
    },
    settings: () => spec.settings,
    healthy: () => watch.healthy(),
  };
}
