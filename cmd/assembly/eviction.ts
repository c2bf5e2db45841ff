/**
 * The eviction manager's wiring: the node's signals from the node server's readers (root cgroup
 * memory, `statfs` of the root dir and of the runtime's image filesystem, `pid_max` and the running
 * processes), the pods' usage from CRI stats and their volumes and logs on disk, container and image GC as node-level reclaim, and the
 * pod lifecycle's eviction records as the kill path.
 */
import { stat } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CriClient } from '../../cri/grpc-client.js';
import { EvictionManager, type NodeReclaimer } from '../../controllers/eviction/eviction-manager.js';
import { signalObservations, type FsReading, type NodeReadings } from '../../controllers/eviction/observations.js';
import { readLocalStorageUsage, readPodUsage, type PodUsageSources } from '../../controllers/eviction/pod-usage.js';
import type { EvictionConfig } from '../../controllers/eviction/thresholds.js';
import type { EventRecorder } from '../../reconcilers/events/event-recorder.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import { readFs, readNode } from '../../server/node-stats.js';
import type { FsFigures } from '../../server/stats-formulas.js';
import type { Clock } from '../../util/clock.js';
import type { NodeController } from '../../controllers/node/node-controller.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import type { GcManager } from '../../controllers/gc/gc-manager.js';
import type { AgentCore } from './core.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import { evictionPodViews } from '../../controllers/eviction/eviction-pods.js';
import type { NodePressureState } from '../../controllers/eviction/node-pressure-state.js';

function fsReading(fs: FsFigures): FsReading {
  return { capacityBytes: fs.capacityBytes, availableBytes: fs.availableBytes, inodes: fs.inodes, inodesFree: fs.inodesFree };
}

/** The node's readings now. */
async function readNodeReadings(cri: CriClient, rootDir: string): Promise<NodeReadings> {
  const [node, nodeFs, imageFilesystems] = await Promise.all([readNode(), readFs(rootDir), cri.image.imageFsInfo()]);
  const mountpoint = imageFilesystems[0]?.mountpoint;
  const imageFs = mountpoint === undefined ? undefined : await readFs(mountpoint);
  return {
    memory: { capacityBytes: Number(node.memory.capacityBytes), workingSetBytes: Number(node.memory.workingSetBytes) },
    pids: { max: node.rlimit.maxpid, running: node.rlimit.curproc },
    nodeFs: fsReading(nodeFs),
    ...(imageFs === undefined ? {} : { imageFs: fsReading(imageFs) }),
  };
}

/**
 * Whether the runtime's image filesystem is another filesystem than the root dir's (the kubelet's
 * dedicated imagefs): then a container's writable layer is not on the node's disk and does not
 * count against its `ephemeral-storage` limit.
 */
async function hasDedicatedImageFs(cri: CriClient, rootDir: string): Promise<boolean> {
  const mountpoint = (await cri.image.imageFsInfo())[0]?.mountpoint;
  if (mountpoint === undefined || mountpoint === '') return false;
  const [root, images] = await Promise.all([stat(rootDir), stat(mountpoint)]);
  return root.dev !== images.dev;
}

/** What the eviction manager is built from. */
export interface EvictionParts {
  readonly config: EvictionConfig;
  readonly rootDir: string;
  /** Where container logs are: they count against `ephemeral-storage` limits. */
  readonly podLogDir?: string;
  readonly cri: CriClient;
  readonly pods: { list(): readonly V1Pod[] };
  readonly podSync: PodSync;
  readonly events: EventRecorder;
  readonly gc: NodeReclaimer;
  readonly podEvents: PodEventSink;
  /** Posts the Node now (its pressure conditions changed). */
  readonly refreshNode: () => void;
  readonly onEvicted?: (signal: string) => void;
  /** The Node's view of the pressure, made before the Node controller. */
  readonly pressure: NodePressureState;
  readonly clock: Clock;
  readonly logger: Logger;
}

export function buildEvictionManager(parts: EvictionParts): EvictionManager {
  const { cri, podSync } = parts;
  const sources: PodUsageSources = { listContainerStats: () => cri.runtime.listContainerStats(), rootDir: parts.rootDir, ...(parts.podLogDir === undefined ? {} : { podLogDir: parts.podLogDir }) };
  return new EvictionManager({
    config: parts.config,
    observe: async () => signalObservations(await readNodeReadings(cri, parts.rootDir)),
    ...evictionPodViews({ pods: parts.pods, lifecycle: podSync.lifecycle, evictions: podSync.evictions, podEvents: parts.podEvents }),
    usage: (pods) => readPodUsage(sources, pods),
    localStorage: async (pods) => {
      const usage = await readLocalStorageUsage(sources, pods);
      return { usage, dedicatedImageFs: usage.length > 0 && (await hasDedicatedImageFs(cri, parts.rootDir)) };
    },
    reclaimer: parts.gc,
    recordEvent: (pod, message) => {
      parts.events.record(pod, { type: 'Warning', reason: 'Evicted', message });
    },
    onConditionsChanged: () => {
      parts.refreshNode();
    },
    pressure: parts.pressure,
    ...(parts.onEvicted === undefined ? {} : { onEvicted: parts.onEvicted }),
    clock: parts.clock,
    logger: parts.logger,
  });
}

/** The eviction manager over the runtime's and the host's figures, counting evictions in /metrics. */
export function buildEviction(
  core: AgentCore,
  parts: { store: DesiredPodStore; podSync: PodSync; events: EventRecorder; gc: GcManager; podEvents: PodEventSink; node: NodeController; pressure: NodePressureState },
): EvictionManager {
  const { settings, cri, metrics, clock, logger } = core;
  return buildEvictionManager({
    config: settings.eviction,
    rootDir: settings.rootDir,
    podLogDir: settings.podLogDir,
    cri,
    pods: parts.store,
    podSync: parts.podSync,
    events: parts.events,
    gc: parts.gc,
    podEvents: parts.podEvents,
    refreshNode: () => void parts.node.refreshNow(),
    pressure: parts.pressure,
    onEvicted: (signal) => { metrics.evictions.evicted(signal); },
    clock,
    logger: logger.child({ component: 'eviction' }),
  });
}
