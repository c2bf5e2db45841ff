/**
 * One health sample of the running agent for the NodeAgent status: runtime readiness, whether Redis
 * answers, whether the API-facing parts are current, and the counts. Each probe is bounded and
 * caught: a sample always resolves, describing failures instead of throwing them.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../util/clock.js';
import { withTimeout } from '../../util/timeout.js';
import type { HealthSample, QueueJobCounts, Readiness } from './status.js';

/** What the sampler asks of the agent's parts (narrow, so tests pass plain functions). */
export interface AgentProbes {
  /** The runtime's readiness as the Node reports it (runtime conditions and PLEG health). */
  readonly runtimeReadiness: () => Promise<Readiness>;
  /** `<runtime>://<version>`, undefined when unknown. */
  readonly runtimeVersion: () => string | undefined;
  readonly queueCounts: () => Promise<QueueJobCounts>;
  /** Pods bound to the node, as the pod source holds them. */
  readonly pods: () => readonly V1Pod[];
  readonly podSourceHealthy: () => boolean;
  readonly nodeHealthy: () => boolean;
  /** Epoch ms of the last successful runtime relist, undefined before the first. */
  readonly lastRelistMs: () => number | undefined;
  readonly clock: Clock;
  /** How long a probe may take before it counts as failed; default 5 s. */
  readonly timeoutMs?: number;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isRunning(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

function apiReadiness(probes: AgentProbes): Readiness {
  if (!probes.podSourceHealthy()) {
    return { ready: false, reason: 'PodWatchNotHealthy', message: 'the pod watch has not synced since its last error, or has gone silent' };
  }
  if (!probes.nodeHealthy()) {
    return { ready: false, reason: 'NodeStatusStale', message: 'the Node status or lease has not been written within the lease duration' };
  }
  return { ready: true, reason: '', message: '' };
}

/** Creates the sampler the NodeAgent controller calls. */
export function createHealthSampler(probes: AgentProbes): () => Promise<HealthSample> {
  const limits = { clock: probes.clock, timeoutMs: probes.timeoutMs ?? 5000 };
  // A probe that hangs reports a TimeoutError ("Redis did not answer within 5000 ms").
  return async () => {
    const [runtime, queue] = await Promise.all([
      withTimeout(probes.runtimeReadiness(), { ...limits, what: 'container runtime' }).catch(
        (err: unknown): Readiness => ({ ready: false, reason: 'RuntimeUnavailable', message: errorText(err) }),
      ),
      withTimeout(probes.queueCounts(), { ...limits, what: 'Redis' }).then(
        (counts) => ({ readiness: { ready: true, reason: '', message: '' }, counts }),
        (err: unknown) => ({ readiness: { ready: false, reason: 'RedisUnavailable', message: errorText(err) }, counts: undefined }),
      ),
    ]);
    return {
      runtime,
      queue: queue.readiness,
      api: apiReadiness(probes),
      queueCounts: queue.counts,
      pods: probes.pods().filter(isRunning).length,
      runtimeVersion: probes.runtimeVersion(),
      lastRelistMs: probes.lastRelistMs(),
    };
  };
}
