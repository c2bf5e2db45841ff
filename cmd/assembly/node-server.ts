/** What the node server reads besides its own settings. */
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import type { buildNodeServer } from '../../server/start.js';
import type { AgentSettings } from '../flags.js';
import type { AgentCore } from './core.js';
import { kubeletConfigurationOf } from '../configz.js';

export function nodeServerParts(core: AgentCore, store: DesiredPodStore): Omit<Parameters<typeof buildNodeServer>[0], keyof AgentSettings['nodeServer'] | 'metrics'> {
  const { settings, kube, cri, clock, logger } = core;
  return {
    nodeName: settings.nodeName,
    nodeIp: settings.nodeIp,
    rootDir: settings.rootDir,
    certDir: settings.certDir,
    podLogDir: settings.podLogDir,
    kube,
    pods: store,
    runtime: cri.runtime,
    images: cri.image,
    clock,
    logger: logger.child({ component: 'node-server' }),
    configz: () => kubeletConfigurationOf(settings),
    cadvisor: { cgroupRoot: settings.cgroups?.cgroupRoot, sandboxImage: settings.sandboxImage },
  };
}
