/** The agent's local health endpoint (server/healthz-server.ts) and what its checks read. */
import type { PeriodicLoop } from '../../util/periodic-loop.js';
import { createHealthzServer, type HealthCheck, type HealthzServer } from '../../server/healthz-server.js';
import type { AgentCore } from './core.js';

/** The kubelet's syncloop check: its loop not turning for this long makes it unhealthy. */
export const SYNC_LOOP_STALL_MS = 2 * 60_000;

/** What the checks read. */
export interface HealthzParts {
  /** The pod housekeeping loop: it turns every 2 s while the agent's pod loop works. */
  readonly housekeeping: Pick<PeriodicLoop, 'lastSuccessAt'>;
  /** The pod sources: watched and synced. */
  readonly podSource: { healthy(): boolean };
  /** PLEG: the runtime relisted within 3 minutes. */
  readonly pleg: { healthy(): boolean };
}

/** Liveness and readiness checks over the agent's parts; `startedAt` is when the loops started. */
export function agentHealthChecks(parts: HealthzParts, now: () => number, startedAt: () => number | undefined): { liveness: HealthCheck[]; readiness: HealthCheck[] } {
  const syncLoop: HealthCheck = {
    name: 'syncloop',
    failure: () => {
      const since = parts.housekeeping.lastSuccessAt() ?? startedAt();
      if (since === undefined) return undefined;
      const stalled = now() - since;
      return stalled > SYNC_LOOP_STALL_MS ? `pod housekeeping has not completed for ${Math.round(stalled / 1000)}s (limit ${SYNC_LOOP_STALL_MS / 1000}s)` : undefined;
    },
  };
  return {
    liveness: [{ name: 'ping', failure: () => undefined }, syncLoop],
    readiness: [
      { name: 'pod-source', failure: () => (parts.podSource.healthy() ? undefined : 'the pods of this node are not watched and synced') },
      { name: 'pleg', failure: () => (parts.pleg.healthy() ? undefined : 'the runtime has not been relisted for 3m0s') },
    ],
  };
}

/** The agent's endpoint: started first; told when the loops its checks judge have started. */
export interface AgentHealthz {
  start(): void;
  /** From now on a stalled pod loop fails liveness. */
  loopsStarted(): void;
  stop(): Promise<void>;
}

/** The endpoint, or undefined when `--healthz-port` is 0. */
export function buildHealthz(core: AgentCore, parts: HealthzParts): AgentHealthz | undefined {
  const { settings, clock, logger } = core;
  if (settings.healthz.port === 0) return undefined;
  let startedAt: number | undefined;
  const checks = agentHealthChecks(parts, () => clock.now(), () => startedAt);
  const server: HealthzServer = createHealthzServer({ address: settings.healthz.address, port: settings.healthz.port, ...checks, clock, logger: logger.child({ component: 'healthz' }) });
  return {
    start: () => { server.start(); },
    loopsStarted: () => { startedAt = clock.now(); },
    stop: () => server.stop(),
  };
}
