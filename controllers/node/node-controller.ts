/**
 * The node controller: registers the Node, posts its status every 10 s (and on demand when readiness
 * changes), and renews its Lease every 10 s, like the kubelet's node status and node lease loops.
 *
 * Two independent heartbeats run on the injected clock. A failing call is logged and retried sooner
 * with capped backoff; nothing here throws into the process. Works with node credentials
 * (`system:node:<name>` under Node authorization and NodeRestriction): it only creates its own Node,
 * patches its own labels and status, and manages its own Lease.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import { CoordinationV1Client } from '../../kube/groups.js';
import type { Logger } from 'pino';
import type { Reservations } from './allocatable.js';
import { agentVersion } from './agent-version.js';
import { systemClock, type Clock } from '../../util/clock.js';
import type { HostInfo } from './host-info.js';
import type { NodeEvent } from '../../reconcilers/events/node-event.js';
import { createNodeLease, DEFAULT_LEASE_DURATION_SECONDS, type LeaseApi } from './lease.js';
import { forbiddenNodeLabels } from './labels.js';
import { DEFAULT_MAX_PODS } from './node-status.js';
import type { NodeApi, NodeStartupMetrics } from './registration.js';
import type { NodeEventSink } from './node-events.js';
import { createNodeStatusReporter, type NodeExtendedResources, type NodePressure, type NodeRuntime } from './status-reporter.js';
import { createPeriodicLoop } from '../../util/periodic-loop.js';

export type { NodeExtendedResources, NodePressure, NodeRuntime } from './status-reporter.js';

/** Options of {@link createNodeController}. */
export interface NodeControllerOptions {
  readonly kube: KubeClient;
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly hostInfo: HostInfo;
  readonly runtime: NodeRuntime;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Extra labels set at registration and kept current; NodeRestriction-forbidden keys are refused. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Annotations set at registration and kept current (the hash of the agent's Redis password). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Taints set when the Node is created (a node cannot change its own taints afterwards). */
  readonly taints?: readonly V1Taint[];
  readonly maxPods?: number;
  /** Resources held back from pods (`--system-reserved`, `--kube-reserved`); none when absent. */
  readonly reservations?: Reservations;
  /** The node server's port, advertised as `daemonEndpoints.kubeletEndpoint.Port` (default 10250). */
  readonly kubeletPort?: number;
  /** The eviction manager's pressure conditions and reservations; absent: no pressure, nothing reserved. */
  readonly pressure?: NodePressure;
  /** Where the Node's own events go (`Starting`, `NodeReady`, pressure, `Rebooted`…); absent: none. */
  readonly events?: NodeEventSink;
  /** Events of the agent's start besides `Starting`, read when the first status is posted. */
  readonly startupEvents?: () => readonly NodeEvent[];
  /** Hears registration and the first Ready status (`kubelet_node_startup_*`); absent: not measured. */
  readonly startup?: NodeStartupMetrics;
  /** Defaults to `v<package version>-nodelet`. */
  readonly agentVersion?: string;
  /** Defaults: status and lease every 10 s (each period jittered by up to 4%), lease duration 40 s. */
  readonly statusPeriodMs?: number;
  readonly leasePeriodMs?: number;
  readonly leaseDurationSeconds?: number;
  /** Test seams; default to clients built from `kube`. */
  readonly nodeApi?: NodeApi;
  readonly leaseApi?: LeaseApi;
  /** A number in [0, 1) for the periods' jitter; default Math.random. */
  readonly random?: () => number;
  /** The device plugins' extended resources in capacity and allocatable; absent: none. */
  readonly extendedResources?: NodeExtendedResources;
  /** The volume manager's volumes in use, posted as the Node's `volumesInUse`; absent: not written. */
  readonly volumesInUse?: () => readonly string[];
}

/** A running node controller. */
export interface NodeController {
  /** Starts registration, the status heartbeat and the lease heartbeat. Returns at once. */
  start(): void;
  /** Stops both heartbeats and waits for calls in flight. */
  stop(): Promise<void>;
  /** Posts status now (e.g. runtime readiness changed). Resolves true when the patch succeeded. */
  refreshNow(): Promise<boolean>;
  /** True when the Node is registered and both status and lease were written within the lease duration. */
  healthy(): boolean;
  /** The Node as last returned by the API server, undefined before registration. */
  node(): V1Node | undefined;
  /** Changes the `pods` capacity and allocatable the Node advertises; a change is posted at once. */
  setMaxPods(maxPods: number): void;
  /** Changes what is held back from pods; the new allocatable is posted at once. */
  setReserved(reservations: Reservations): void;
}

/** Configured labels that NodeRestriction would refuse: registration could never succeed. */
export class ForbiddenNodeLabelError extends Error {
  override readonly name = 'ForbiddenNodeLabelError';
  constructor(readonly labels: readonly string[]) {
    super(`a node may not set these labels on itself: ${labels.join(', ')}`);
  }
}

/** True when `err` is a {@link ForbiddenNodeLabelError}. */
export function isForbiddenNodeLabelError(err: unknown): err is ForbiddenNodeLabelError {
  return err instanceof ForbiddenNodeLabelError;
}

const DEFAULT_PERIOD_MS = 10_000;
const STATUS_BACKOFF_INITIAL_MS = 500;
// The kubelet retries a failed lease renewal after 200 ms, doubling up to 7 s.
const LEASE_BACKOFF = { initialMs: 200, maxMs: 7_000 };
/**
 * The kubelet runs both heartbeats with `wait.JitterUntil(…, 0.04, …)` (kubelet.go's
 * syncNodeStatus, the lease controller's sync): nodes started together drift apart instead of
 * writing to the API server in the same instant every 10 s.
 */
const HEARTBEAT_JITTER = 0.04;

/**
 * Creates a node controller; nothing is sent until `start()`.
 * Throws {@link ForbiddenNodeLabelError} when configured labels could never be registered.
 */
export function createNodeController(options: NodeControllerOptions): NodeController {
  const forbidden = forbiddenNodeLabels(options.labels ?? {});
  if (forbidden.length > 0) throw new ForbiddenNodeLabelError(forbidden);
  const clock = options.clock ?? systemClock;
  const logger = options.logger.child({ component: 'node-controller' });
  const statusPeriodMs = options.statusPeriodMs ?? DEFAULT_PERIOD_MS;
  const leaseDurationMs = (options.leaseDurationSeconds ?? DEFAULT_LEASE_DURATION_SECONDS) * 1000;

  const reporter = createNodeStatusReporter({
    api: options.nodeApi ?? new CoreV1Client(options.kube),
    nodeName: options.nodeName,
    nodeIp: options.nodeIp,
    hostInfo: options.hostInfo,
    runtime: options.runtime,
    logger,
    clock,
    labels: options.labels ?? {},
    ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    taints: options.taints ?? [],
    maxPods: options.maxPods,
    ...(options.reservations === undefined ? {} : { reservations: options.reservations }),
    kubeletPort: options.kubeletPort,
    agentVersion: options.agentVersion ?? agentVersion(),
    pressure: options.pressure,
    events: options.events,
    startupEvents: options.startupEvents,
    startup: options.startup,
    extendedResources: options.extendedResources,
    volumesInUse: options.volumesInUse,
  });
  const lease = createNodeLease({
    api: options.leaseApi ?? new CoordinationV1Client(options.kube),
    nodeName: options.nodeName,
    leaseDurationSeconds: options.leaseDurationSeconds,
    clock,
    nodeUid: () => reporter.node()?.metadata?.uid,
  });

  const heartbeat = { jitter: HEARTBEAT_JITTER, random: options.random, clock, logger };
  const statusLoop = createPeriodicLoop({
    ...heartbeat,
    name: 'node-status',
    periodMs: statusPeriodMs,
    backoff: { initialMs: STATUS_BACKOFF_INITIAL_MS, maxMs: statusPeriodMs },
    run: () => reporter.post(),
  });
  const leaseLoop = createPeriodicLoop({
    ...heartbeat,
    name: 'node-lease',
    periodMs: options.leasePeriodMs ?? DEFAULT_PERIOD_MS,
    backoff: LEASE_BACKOFF,
    run: async () => {
      await lease.renew();
    },
  });
  let maxPods = options.maxPods ?? DEFAULT_MAX_PODS;
  let started = false;
  const fresh = (at: number | undefined): boolean => at !== undefined && clock.now() - at <= leaseDurationMs;

  return {
    start(): void {
      started = true;
      statusLoop.start();
      leaseLoop.start();
    },
    async stop(): Promise<void> {
      await Promise.all([statusLoop.stop(), leaseLoop.stop()]);
    },
    refreshNow: () => statusLoop.runNow(),
    healthy: () => reporter.node() !== undefined && fresh(statusLoop.lastSuccessAt()) && fresh(leaseLoop.lastSuccessAt()),
    node: () => reporter.node(),
    setMaxPods(next: number): void {
      if (next === maxPods) return;
      maxPods = next;
      reporter.setMaxPods(next);
      // Not awaited: a failed post is retried by the status loop itself. Before start, the first
      // post carries the new value anyway.
      if (started) void statusLoop.runNow();
    },
    setReserved(reservations: Reservations): void {
      reporter.setReservations(reservations);
      if (started) void statusLoop.runNow();
    },
  };
}
