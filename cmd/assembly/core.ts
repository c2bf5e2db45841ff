/** What every builder of the agent's parts reads: the settings and the clients made first. */
import type { Logger } from 'pino';
import type { CriClient } from '../../cri/grpc-client.js';
import type { RuntimeService, VersionInfo } from '../../cri/types.js';
import type { KubeClient } from '../../kube/client.js';
import type { NodeMetrics } from '../../server/node-metrics.js';
import type { Clock } from '../../util/clock.js';
import type { AgentSettings } from '../flags.js';

/** The agent's settings, clients and metrics, made before any part. */
export interface AgentCore {
  readonly settings: AgentSettings;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Every API request but the two below, rate-limited (`--kube-api-qps`). */
  readonly kube: KubeClient;
  /** The Node status and Lease: the same connection, never rate-limited (credentials.ts). */
  readonly heartbeatKube: KubeClient;
  /** Events: the same connection, their own rate limit (credentials.ts). */
  readonly eventKube: KubeClient;
  readonly cri: CriClient;
  readonly runtimeVersion: VersionInfo;
  readonly metrics: NodeMetrics;
}

/** Waits until the runtime answers `Version`, retrying with capped backoff. */
export async function waitForRuntime(runtime: RuntimeService, logger: Logger, clock: Clock): Promise<VersionInfo> {
  for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      const version = await runtime.version();
      logger.info({ runtime: version.runtimeName, version: version.runtimeVersion, criVersion: version.runtimeApiVersion }, 'container runtime is up');
      return version;
    } catch (error) {
      logger.warn({ err: error, retryInMs: delayMs }, 'container runtime is not answering');
      await new Promise<void>((resolve) => clock.setTimeout(resolve, delayMs));
    }
  }
}
