/** The runtime's container event stream waking the PLEG (`controllers/pleg/container-event-watcher.ts`). */
import { ContainerEventWatcher } from '../../controllers/pleg/container-event-watcher.js';
import { openContainerEvents } from '../../cri/container-events.js';
import type { AgentCore } from './core.js';

/** A watcher of the runtime at `--cri-endpoint` that asks `pleg` for a relist at each event of this node's pods. */
export function buildContainerEvents(core: AgentCore, pleg: { relistNow(): Promise<boolean> }): ContainerEventWatcher {
  const { settings, clock, logger } = core;
  return new ContainerEventWatcher({
    stream: openContainerEvents(settings.criEndpoint),
    relistNow: () => pleg.relistNow(),
    nodeName: settings.nodeName,
    clock,
    logger: logger.child({ component: 'container-events' }),
  });
}
