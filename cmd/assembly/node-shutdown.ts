/**
 * Graceful node shutdown's wiring: logind on the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the
 * specification's default socket), the node's pods through the eviction kill path (the lifecycle's
 * records, then an `evicted` pod event), the Node's status and events. Nothing is built when the
 * settings leave graceful shutdown off, as the kubelet then runs its stub.
 */
import path from 'node:path';
import { evictionPodViews } from '../../controllers/eviction/eviction-pods.js';
import type { NodeController } from '../../controllers/node/node-controller.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import { connectLogind } from '../../controllers/shutdown/logind.js';
import { NodeShutdownManager } from '../../controllers/shutdown/node-shutdown-manager.js';
import { shutdownGroups } from '../../controllers/shutdown/shutdown-plan.js';
import type { NodeShutdownState } from '../../controllers/shutdown/shutdown-state.js';
import type { NodeEventSink } from '../../reconcilers/events/node-event.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import { DEFAULT_SYSTEM_BUS_ADDRESS } from '../../util/dbus/connection.js';
import type { AgentCore } from './core.js';

/** The kubelet's state file name, under the root dir. */
const STATE_FILE = 'graceful_node_shutdown_state';

export interface NodeShutdownParts {
  readonly state: NodeShutdownState;
  readonly store: DesiredPodStore;
  readonly podSync: PodSync;
  readonly podEvents: PodEventSink;
  readonly node: NodeController;
  readonly nodeEvents: NodeEventSink;
}

/** The manager, or undefined when graceful node shutdown is off. */
export function buildNodeShutdown(core: AgentCore, parts: NodeShutdownParts, env: NodeJS.ProcessEnv = process.env): NodeShutdownManager | undefined {
  const { settings, clock, logger, metrics } = core;
  const groups = shutdownGroups(settings.shutdown);
  if (groups.length === 0) return undefined;
  const busAddress = env.DBUS_SYSTEM_BUS_ADDRESS ?? DEFAULT_SYSTEM_BUS_ADDRESS;
  const views = evictionPodViews({ pods: parts.store, lifecycle: parts.podSync.lifecycle, evictions: parts.podSync.evictions, podEvents: parts.podEvents });
  return new NodeShutdownManager({
    groups,
    connect: (signal) => connectLogind({ busAddress, confDir: settings.shutdown.logindConfDir, signal }),
    pods: { activePods: views.activePods, kill: views.evict, cleanedUp: views.podCleanedUp ?? (() => true) },
    state: parts.state,
    refreshNodeStatus: () => parts.node.refreshNow(),
    recordNodeEvent: (reason, message) => {
      parts.nodeEvents.recordNode({ name: settings.nodeName, uid: parts.node.node()?.metadata?.uid ?? '' }, { type: 'Normal', reason, message });
    },
    stateFile: path.join(settings.rootDir, STATE_FILE),
    metrics: metrics.gracefulShutdown,
    clock,
    logger: logger.child({ component: 'node-shutdown' }),
  });
}
