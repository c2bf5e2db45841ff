/**
 * The agent's API clients: one connection, from `--kubeconfig` (or the pod's service account) as
 * given, or, with a bootstrap credential, from the node's own client certificate once it is issued
 * (kube/node-identity.ts); on it, the kubelet's three clients (cmd/kubelet/app/server.go, `RunKubelet`):
 * - `kube`, every request but the two below, limited by `--kube-api-qps` / `--kube-api-burst`;
 * - `heartbeatKube`, the Node status and the Lease, not limited (the kubelet's heartbeat client has
 *   QPS -1), so a relist or a burst of status writes can never delay the heartbeat until the node
 *   is marked NotReady;
 * - `eventKube`, events, in a bucket of their own at the kubelet's `eventRecordQPS` and
 *   `eventBurst` (50 and 100, the only values nodelet accepts: kubelet-config-defaults.ts).
 */
import type { Logger } from 'pino';
import { KubeClient, connectKube } from '../../kube/client.js';
import { inClusterEndpoint, loadKubeconfigFile } from '../../kube/kubeconfig.js';
import { establishNodeIdentity } from '../../kube/node-identity.js';
import { apiRateLimiter, type ApiRateLimits } from '../../kube/rate-limit.js';
import { KubeTransport, type KubeRequestMetrics, type KubeTransportLimits } from '../../kube/transport.js';
import type { Clock } from '../../util/clock.js';
import type { AgentSettings } from '../flags.js';

/** The kubelet's `eventRecordQPS` and `eventBurst` defaults. */
const EVENT_LIMITS: ApiRateLimits = { qps: 50, burst: 100 };

/** The clients and what stops their credentials' rotation. */
export interface AgentKube {
  readonly kube: KubeClient;
  /** The Node status and Lease writes: the same connection, never rate-limited. */
  readonly heartbeatKube: KubeClient;
  /** Events: the same connection, their own rate limit. */
  readonly eventKube: KubeClient;
  stop(): void;
}

/** The three clients on one connection; see this file's header. */
export function agentClients(kube: KubeClient, clock: Clock): Omit<AgentKube, 'stop'> {
  const events = apiRateLimiter(EVENT_LIMITS, clock);
  return { kube, heartbeatKube: kube.withRateLimiter('none'), eventKube: kube.withRateLimiter(events ?? 'none') };
}

/**
 * See this file's header; waits for the node's certificate when there is none yet. `metrics` hears
 * every API request of the agent, the bootstrap's included (`rest_client_*`). The certificate
 * requests of the bootstrap are not rate-limited: a handful per rotation (the kubelet's certificate
 * client has client-go's default limit, 5 QPS, which they never reach).
 */
export async function connectAgentKube(settings: AgentSettings, clock: Clock, logger: Logger, metrics?: KubeRequestMetrics): Promise<AgentKube> {
  const credentials = settings.credentials;
  const rateLimiter = apiRateLimiter(settings.kubeApi, clock);
  const limits: KubeTransportLimits = { ...(metrics === undefined ? {} : { metrics }), ...(rateLimiter === undefined ? {} : { rateLimiter }) };
  if (credentials === undefined) {
    const kube = connectKube(settings.kubeconfig, clock, limits);
    return { ...agentClients(kube, clock), stop: () => { kube.close(); } };
  }
  const bootstrap = credentials.bootstrap.kind === 'service-account' ? inClusterEndpoint() : loadKubeconfigFile(credentials.bootstrap.path);
  const identity = await establishNodeIdentity({
    nodeName: settings.nodeName,
    bootstrap,
    certDir: settings.certDir,
    rotate: credentials.rotate,
    ...(settings.kubeconfig === undefined ? {} : { kubeconfigOut: settings.kubeconfig }),
    clock,
    random: Math.random,
    logger,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const kube = new KubeClient(new KubeTransport(identity.endpoint, clock, limits));
  return {
    ...agentClients(kube, clock),
    stop: () => {
      identity.stop();
      kube.close();
    },
  };
}
