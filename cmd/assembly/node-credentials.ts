/** The node's credential provider plugins (`--image-credential-provider-*`), as the image puller's node credentials. */
import type { Logger } from 'pino';
import type { AgentSettings } from '../flags.js';
import { loadCredentialProviders } from '../../reconcilers/images/credential-providers/config.js';
import { execCredentialPlugin } from '../../reconcilers/images/credential-providers/exec-plugin.js';
import { NodeCredentials } from '../../reconcilers/images/credential-providers/node-credentials.js';
import type { NodePullCredentials } from '../../reconcilers/images/image-puller.js';
import { authConfigsFor, repositoryOf } from '../../reconcilers/images/pull-secrets.js';
import type { Clock } from '../../util/clock.js';

/**
 * Loads and checks the plugins' config before the agent starts (a config the kubelet would refuse
 * stops the agent, with the reason); undefined without the flags.
 * @throws CredentialProviderConfigError
 */
export async function buildNodeCredentials(settings: AgentSettings, clock: Clock, logger: Logger): Promise<NodePullCredentials | undefined> {
  const configured = settings.imageCredentialProviders;
  if (configured === undefined) return undefined;
  const providers = await loadCredentialProviders(configured.configPath, configured.binDir);
  const node = new NodeCredentials({ providers, run: execCredentialPlugin({ binDir: configured.binDir }), clock, logger: logger.child({ component: 'credential-providers' }) });
  logger.info({ providers: providers.map((p) => ({ name: p.name, matchImages: p.matchImages })) }, 'image credential provider plugins configured');
  return async (image, signal) => {
    const target = repositoryOf(image);
    if (target === undefined) return [];
    return authConfigsFor(target.domain, await node.lookup(target.repository, signal));
  };
}
