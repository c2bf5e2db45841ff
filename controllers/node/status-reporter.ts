/**
 * One status heartbeat: make sure the Node is registered, gather host facts and runtime state, and
 * patch `nodes/status`. The Node the API server returns is the `previous` of the next heartbeat, so
 * transition times follow what the server holds (including `Unknown` set by the node lifecycle
 * controller while nodelet was away).
 */
import type { RuntimeFeatureSnapshot } from '../../reconcilers/runtime/runtime-features.js';
import { NO_RESERVATIONS, type Reservations } from './allocatable.js';
import type { V1ContainerImage, V1Node, V1NodeStatus, V1Taint } from '@kubernetes/client-node';
import { nodeStatusEvents, schedulableEvent, startingEvent, type NodeEventSink } from './node-events.js';
import type { NodeEvent } from '../../reconcilers/events/node-event.js';
import type { Image } from '../../cri/types.js';
import { nodeImagesOf } from './node-images.js';
import { PatchType } from '../../kube/client.js';
import type { Logger } from 'pino';
import { isNotFound } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';
import type { HostInfo } from './host-info.js';
import { defaultNodeLabels } from './labels.js';
import { registerNode, type NodeStartupMetrics, type NodeApi } from './registration.js';
import { buildNodeStatus, formatRuntimeVersion, readyConditionOf, type NodeReadiness } from './node-status.js';

/** What the node controller asks the container runtime (the agent adapts CRI Version/Status to it). */
export interface NodeRuntime {
  version(): Promise<{ runtimeName: string; runtimeVersion: string }>;
  readiness(): Promise<NodeReadiness>;
  /** The runtime's handlers and features as its last Status (the readiness check's) reported them; none known: not written. */
  features?(): RuntimeFeatureSnapshot | undefined;
  /** The runtime's images for the Node's `images` (`node-images.ts`); absent: not written. */
  images?(): Promise<readonly Image[]>;
}

/** Options of {@link createNodeStatusReporter}. */
export interface NodeStatusReporterOptions {
  readonly api: NodeApi;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly hostInfo: HostInfo;
  readonly runtime: NodeRuntime;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly labels: Readonly<Record<string, string>>;
  /** Annotations nodelet owns on its Node. */
  readonly annotations?: Readonly<Record<string, string>>;
  readonly taints: readonly V1Taint[];
  readonly maxPods: number | undefined;
  /** Resources held back from pods (`--system-reserved`, `--kube-reserved`); none when absent. */
  readonly reservations?: Reservations;
  /** The node server's port (`daemonEndpoints`); undefined: the default 10250. */
  readonly kubeletPort?: number | undefined;
  readonly agentVersion: string;
  /** The eviction manager's conditions and the allocatable its hard thresholds hold back. */
  readonly pressure?: NodePressure | undefined;
  /** Where the Node's own events go (`node-events.ts`); absent: none recorded. */
  readonly events?: NodeEventSink | undefined;
  /** Events of the agent's start besides `Starting` (the host's cgroup v1 warning, allocatable enforced), read at the first post. */
  readonly startupEvents?: (() => readonly NodeEvent[]) | undefined;
  /** Hears registration and the first Ready status (`kubelet_node_startup_*`); absent: not measured. */
  readonly startup?: NodeStartupMetrics | undefined;
  /** The device plugins' extended resources, read at each post; absent: none. */
  readonly extendedResources?: NodeExtendedResources | undefined;
  /** The volume manager's volumes in use (`volumesInUse`), read at each post; absent: not written. */
  readonly volumesInUse?: (() => readonly string[]) | undefined;
}

/** The device plugins' resources as the Node reports them (narrow: the device manager implements it). */
export interface NodeExtendedResources {
  extendedResources(): { readonly capacity: Readonly<Record<string, number>>; readonly allocatable: Readonly<Record<string, number>> };
}

/** What the Node reports of the eviction manager (narrow, so tests pass plain objects). */
export interface NodePressure {
  conditions(): readonly string[];
  reservedBytes(capacity: { readonly memoryBytes: number; readonly ephemeralStorageBytes: number }): { readonly memoryBytes: number; readonly ephemeralStorageBytes: number };
}

/** Registers the Node on first use and posts its status. */
export interface NodeStatusReporter {
  /** Registers if needed, then patches status. Rejects on API failure (the caller retries). */
  post(): Promise<void>;
  /** The Node as last returned by the API server, undefined until registered. */
  node(): V1Node | undefined;
  /** Changes the `pods` capacity reported from the next `post()` on. */
  setMaxPods(maxPods: number): void;
  /** Changes the reservations allocatable is computed with (posted with the next status). */
  setReservations(reservations: Reservations): void;
}

async function probeReadiness(runtime: NodeRuntime, logger: Logger): Promise<NodeReadiness> {
  try {
    return await runtime.readiness();
  } catch (err: unknown) {
    logger.debug({ err }, 'runtime readiness probe failed');
    return { ready: false, reason: 'ContainerRuntimeDown', message: 'container runtime is not responding' };
  }
}

async function probeRuntimeVersion(runtime: NodeRuntime, logger: Logger): Promise<string | undefined> {
  try {
    return formatRuntimeVersion(await runtime.version());
  } catch (err: unknown) {
    logger.debug({ err }, 'runtime version probe failed');
    return undefined;
  }
}

/** The Node's images, or undefined (the last ones stay) when the runtime cannot list them. */
async function probeImages(runtime: NodeRuntime, logger: Logger): Promise<V1ContainerImage[] | undefined> {
  if (runtime.images === undefined) return undefined;
  try {
    return nodeImagesOf(await runtime.images());
  } catch (err: unknown) {
    logger.warn({ err }, 'error getting image list');
    return undefined;
  }
}

/**
 * The Node's events of each heartbeat that reached the API server: `Starting` after the first, then
 * what changed between the status the server held and the one posted, and cordoning.
 */
function nodeEventRecorder(nodeName: string, sink: NodeEventSink | undefined, startup: () => readonly NodeEvent[]): { afterPost(previous: V1NodeStatus | undefined, posted: V1NodeStatus, node: V1Node): void } {
  let started = false;
  // The kubelet starts from schedulable, so a node cordoned before the agent started says so once.
  let unschedulable = false;
  return {
    afterPost: (previous, posted, node) => {
      if (sink === undefined) return;
      const ref = { name: nodeName, uid: node.metadata?.uid ?? '' };
      const now = node.spec?.unschedulable === true;
      const cordon = schedulableEvent(nodeName, unschedulable, now);
      unschedulable = now;
      const all = [...(started ? [] : [startingEvent(), ...startup()]), ...nodeStatusEvents(nodeName, previous, posted), ...(cordon === undefined ? [] : [cordon])];
      started = true;
      for (const event of all) sink.recordNode(ref, event);
    },
  };
}

/** Creates the reporter; nothing is sent until `post()`. */
export function createNodeStatusReporter(options: NodeStatusReporterOptions): NodeStatusReporter {
  const { api, nodeName, logger } = options;
  let current: V1Node | undefined;
  let runtimeVersion: string | undefined;
  const events = nodeEventRecorder(nodeName, options.events, options.startupEvents ?? (() => []));
  let maxPods = options.maxPods;
  let reservations = options.reservations ?? NO_RESERVATIONS;

  async function ensureRegistered(): Promise<V1Node> {
    if (current) return current;
    const facts = await options.hostInfo.read();
    current = await registerNode({
      api,
      logger,
      nodeName,
      // Defaults last: a configured label cannot override what nodelet must report about the host.
      labels: { ...options.labels, ...defaultNodeLabels(nodeName, facts.architecture) },
      ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
      taints: options.taints,
      ...(options.startup === undefined ? {} : { startup: options.startup }),
    });
    return current;
  }

  function logReadyTransition(before: V1Node['status'], after: V1Node['status']): void {
    const was = readyConditionOf(before);
    const now = readyConditionOf(after);
    if (was?.status === now?.status) return;
    logger.info({ from: was?.status, to: now?.status, reason: now?.reason, message: now?.message }, 'node Ready changed');
  }

  async function post(): Promise<void> {
    const previous = (await ensureRegistered()).status;
    const [facts, readiness, probedVersion] = await Promise.all([
      options.hostInfo.read(),
      probeReadiness(options.runtime, logger),
      probeRuntimeVersion(options.runtime, logger),
    ]);
    runtimeVersion = probedVersion ?? runtimeVersion;
    const runtimeFeatures = options.runtime.features?.();
    const images = await probeImages(options.runtime, logger);
    const status = buildNodeStatus(facts, {
      ...(runtimeFeatures === undefined ? {} : { runtimeFeatures }),
      ...(images === undefined ? {} : { images }),
      runtimeVersion,
      agentVersion: options.agentVersion,
      nodeIp: options.nodeIp,
      readiness,
      maxPods,
      reservations,
      ...(options.kubeletPort === undefined ? {} : { kubeletPort: options.kubeletPort }),
      now: new Date(options.clock.now()),
      previous,
      ...(options.pressure === undefined ? {} : { pressure: options.pressure.conditions(), reserved: options.pressure.reservedBytes(facts) }),
      ...(options.extendedResources === undefined ? {} : { extendedResources: options.extendedResources.extendedResources() }),
      ...(options.volumesInUse === undefined ? {} : { volumesInUse: options.volumesInUse() }),
    });
    try {
      // Strategic merge: conditions and addresses merge by type, so entries set by others survive.
      current = await api.patchNodeStatus(
        { name: nodeName, body: { status } },
        PatchType.strategicMerge,
      );
    } catch (err: unknown) {
      // The Node was deleted under us: register it again on the next heartbeat.
      if (isNotFound(err)) current = undefined;
      throw err;
    }
    logReadyTransition(previous, current.status);
    // As the kubelet's patchNodeStatus: the Node as the server returned it says Ready.
    if (readyConditionOf(current.status)?.status === 'True') options.startup?.nodeReady();
    events.afterPost(previous, status, current);
  }

  return {
    post,
    node: () => current,
    setMaxPods: (next) => {
      maxPods = next;
    },
    setReservations: (next) => {
      reservations = next;
    },
  };
}
