/**
 * The agent's one API client: from `--kubeconfig` (or the pod's service account) as given, or, with
 * a bootstrap credential, from the node's own client certificate once it is issued (kube/node-identity.ts).
 */
import type { Logger } from 'pino';
import { KubeClient, connectKube } from '../../kube/client.js';
import { inClusterEndpoint, loadKubeconfigFile } from '../../kube/kubeconfig.js';
import { establishNodeIdentity } from '../../kube/node-identity.js';
import { KubeTransport, type KubeRequestMetrics } from '../../kube/transport.js';
import type { Clock } from '../../util/clock.js';
import type { AgentSettings } from '../flags.js';

/** The client and what stops its credentials' rotation. */
export interface AgentKube {
  readonly kube: KubeClient;
  stop(): void;
}

/**
 * See this file's header; waits for the node's certificate when there is none yet. `metrics` hears
 * every API request of the agent, the bootstrap's included (`rest_client_*`).
 */
export async function connectAgentKube(settings: AgentSettings, clock: Clock, logger: Logger, metrics?: KubeRequestMetrics): Promise<AgentKube> {
  const credentials = settings.credentials;
  if (credentials === undefined) {
    const kube = connectKube(settings.kubeconfig, clock, metrics === undefined ? {} : { metrics });
    return { kube, stop: () => { kube.close(); } };
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
  const kube = new KubeClient(new KubeTransport(identity.endpoint, clock, metrics === undefined ? {} : { metrics }));
  return {
    kube,
    stop: () => {
      identity.stop();
      kube.close();
    },
  };
}
