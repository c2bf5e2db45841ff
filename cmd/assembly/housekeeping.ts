/** Container and image garbage collection and container log rotation, with where the NodeAgent's live settings reach them. */
import { GcManager } from '../../controllers/gc/gc-manager.js';
import { gcPolicyOf } from '../../controllers/gc/gc-policy.js';
import { LogRotationManager, type LogRotationPolicy } from '../../controllers/logs/log-rotation-manager.js';
import type { EvictionManager } from '../../controllers/eviction/eviction-manager.js';
import { logSizeBytes, type GcSettings, type LogRotationSettings } from '../../controllers/nodeagent/settings.js';
import type { LiveParts } from '../../controllers/nodeagent/targets.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import type { AgentCore } from './core.js';

/** The garbage collector: reads the runtime and the store, hands gone pods to the reconciler. */
export function buildGc(core: AgentCore, store: DesiredPodStore, podEvents: PodEventSink, podSync: PodSync): GcManager {
  const { settings, cri, clock, logger } = core;
  return new GcManager({
    runtime: cri.runtime,
    images: cri.image,
    nodeName: settings.nodeName,
    podLogDir: settings.podLogDir,
    containerLogLinkDir: settings.containerLogLinkDir,
    rootDir: settings.rootDir,
    pods: { has: (uid) => store.get(uid) !== undefined, synced: () => store.synced(), confirmGone: (key) => store.confirmGone(key) },
    podEvents,
    sandboxImage: settings.sandboxImage,
    policy: gcPolicyOf(settings.gc),
    clock,
    logger: logger.child({ component: 'gc' }),
    metrics: core.metrics.imageGc,
    ...(podSync.cgroups === undefined ? {} : { podCgroups: podSync.cgroups }),
  });
}

/** The rotation policy of a validated `LogRotationSettings` (flags or NodeAgent `spec.logRotation`). */
function logRotationPolicyOf(settings: LogRotationSettings): LogRotationPolicy {
  return { maxSizeBytes: logSizeBytes(settings.containerLogMaxSize), maxFiles: settings.containerLogMaxFiles };
}

/** Container log rotation over this node's running containers. */
export function buildLogRotation(core: AgentCore): LogRotationManager {
  const { settings, cri, clock, logger } = core;
  return new LogRotationManager({
    runtime: cri.runtime,
    nodeName: settings.nodeName,
    podLogDir: settings.podLogDir,
    policy: logRotationPolicyOf(settings.logRotation),
    clock,
    logger: logger.child({ component: 'log-rotation' }),
  });
}

/** Where the NodeAgent's `spec.gc`, `spec.logRotation` and `spec.eviction` land. */
export function housekeepingTargets(gc: GcManager, logRotation: LogRotationManager, eviction: EvictionManager): Pick<LiveParts, 'gc' | 'logRotation' | 'eviction'> {
  return {
    gc: { setSettings: (s: GcSettings) => { gc.setPolicy(gcPolicyOf(s)); } },
    logRotation: { setSettings: (s: LogRotationSettings) => { logRotation.setPolicy(logRotationPolicyOf(s)); } },
    eviction: { setSettings: (s) => { eviction.setConfig(s); } },
  };
}
