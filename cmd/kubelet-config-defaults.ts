/**
 * KubeletConfiguration fields nodelet accepts only at the value the kubelet v1.37 defaults them to
 * (`pkg/kubelet/apis/config/v1beta1/defaults.go`), because at that value the kubelet does what
 * nodelet does, or nothing a pod or the API can see. A kubelet's own `/configz` and kubeadm's
 * generated file list such fields; another value is refused, named, by `kubelet-config.ts`.
 */
import { InvalidGoDurationError, parseGoDurationMs } from '../util/go-duration.js';

/** One field: whether a value is the default, and why the default changes nothing on nodelet. */
export interface DefaultOnlyField {
  readonly isDefault: (value: unknown) => boolean;
  readonly why: string;
}

/** Milliseconds of a duration value, or undefined when it is not one. */
function durationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return parseGoDurationMs(value);
  } catch (error) {
    if (error instanceof InvalidGoDurationError) return undefined;
    throw error;
  }
}

/**
 * A duration equal to `ms` (`2m0s`, `120s` alike), or zero: the kubelet's defaulting replaces a
 * zero duration with the default (kubeadm writes `0s` for "the default").
 */
function duration(ms: number): (value: unknown) => boolean {
  return (value) => {
    const got = durationMs(value);
    return got === ms || got === 0;
  };
}

/**
 * Fields that become flags, whose zero value (`0s`, `""`) the kubelet's defaulting replaces with
 * the default, which is nodelet's too: such a value leaves the flag at its default.
 */
export const ZERO_IS_DEFAULT: ReadonlySet<string> = new Set([
  'httpCheckFrequency',
  'imageMinimumGCAge',
  'evictionPressureTransitionPeriod',
  'containerRuntimeEndpoint',
  'podLogsDir',
  'healthzBindAddress',
  'clusterDomain',
  'resolvConf',
  'containerLogMaxSize',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
  // An int32, not a pointer: 0 is "unset" and defaulted to 100. kubeAPIQPS is a pointer, so its 0
  // stays 0 (5 QPS per API group-version, kube/rate-limit.ts) and is not listed here.
  'kubeAPIBurst',
]);

/** A zero value: an empty string, `0`, or a zero duration. */
export function isZeroValue(value: unknown): boolean {
  return value === '' || value === 0 || durationMs(value) === 0;
}

const is =
  (...allowed: readonly unknown[]) =>
  (value: unknown): boolean =>
    allowed.includes(value);

/** An empty map, or one whose keys are all absent or default. */
const emptyOr =
  (check: (v: Record<string, unknown>) => boolean) =>
  (value: unknown): boolean =>
    typeof value === 'object' && value !== null && !Array.isArray(value) && check(value as Record<string, unknown>);

const field = (isDefault: (value: unknown) => boolean, why: string): DefaultOnlyField => ({ isDefault, why });

export const DEFAULT_ONLY_FIELDS: Readonly<Record<string, DefaultOnlyField>> = {
  enableServer: field(is(true), 'the node server always runs'),
  syncFrequency: field(duration(60_000), 'pods are resynced every --resync-period (60 s)'),
  fileCheckFrequency: field(duration(20_000), 'static pod manifests are re-read every 20 s'),
  eventRecordQPS: field(is(50), 'events have their own rate limit at 50 QPS, and are aggregated as the kubelet aggregates them'),
  eventBurst: field(is(100), "that limit's burst is 100"),
  enableDebuggingHandlers: field(is(true), 'logs, exec, attach and port-forward are served'),
  oomScoreAdj: field(is(-999), "the agent's own OOM score is its pod's"),
  streamingConnectionIdleTimeout: field(duration(4 * 3_600_000), "streams end after the runtime's 4 h idle timeout"),
  nodeStatusUpdateFrequency: field(duration(10_000), 'the Node status is posted every 10 s'),
  nodeStatusReportFrequency: field(duration(300_000), 'the Node status is posted every 10 s, unchanged or not'),
  nodeLeaseDurationSeconds: field(is(40), 'the lease lasts 40 s'),
  volumeStatsAggPeriod: field(duration(60_000), 'volume usage is read when stats are asked for'),
  cpuManagerPolicy: field(is('none'), 'no CPU pinning, as the none policy'),
  cpuManagerReconcilePeriod: field(duration(10_000), 'no CPU manager'),
  memoryManagerPolicy: field(is('None'), 'no memory manager, as the None policy'),
  topologyManagerPolicy: field(is('none'), 'no topology manager, as the none policy'),
  topologyManagerScope: field(is('container'), 'no topology manager'),
  hairpinMode: field(is('promiscuous-bridge', 'hairpin-veth'), 'the CNI configuration decides'),
  maxOpenFiles: field(is(1000000), "the agent's limit is its container's"),
  contentType: field(is('application/vnd.kubernetes.protobuf'), 'the API client speaks JSON; the API is the same'),
  enableControllerAttachDetach: field(is(true), 'nodelet attaches no volumes'),
  iptablesMasqueradeBit: field(is(14), 'nodelet adds no iptables rules'),
  iptablesDropBit: field(is(15), 'nodelet adds no iptables rules'),
  containerLogMaxWorkers: field(is(1), 'logs are rotated one at a time'),
  containerLogMonitorInterval: field(duration(10_000), 'logs are checked for rotation every 10 s'),
  configMapAndSecretChangeDetectionStrategy: field(is('Watch'), 'configMap and secret volumes follow their sources within a resync period'),
  enforceNodeAllocatable: field((v) => Array.isArray(v) && v.length === 1 && v[0] === 'pods', 'allocatable is enforced on the pods cgroup (with --cgroups-per-qos)'),
  enableSystemLogHandler: field(is(true), '/logs/ is served'),
  enableProfilingHandler: field(is(true, false), 'not a pod-facing handler'),
  enableDebugFlagsHandler: field(is(true, false), 'not a pod-facing handler'),
  registerNode: field(is(true), 'the Node is always registered'),
  localStorageCapacityIsolation: field(is(true), 'ephemeral-storage limits are enforced by eviction'),
  mergeDefaultEvictionSettings: field(is(false), 'eviction thresholds are taken as given'),
  memoryThrottlingFactor: field(is(0.9), 'no memory QoS (MemoryQoS is off)'),
  memoryReservationPolicy: field(is('None'), 'no memory.min or memory.low protection (MemoryQoS is off)'),
  nodeStatusMaxImages: field(is(50), 'the Node reports the 50 largest images'),
  cpuCFSQuotaPeriod: field(duration(100), 'the CFS period is 100 ms'),
  runtimeRequestTimeout: field(duration(120_000), 'CRI calls time out at 60 s, before the kubelet’s 2 min: a slower runtime call is retried by the next reconcile'),
  crashLoopBackOff: field(emptyOr((v) => v.maxContainerRestartPeriod === undefined || duration(300_000)(v.maxContainerRestartPeriod)), 'the restart backoff is 10 s doubling to 5 min (the NodeAgent changes it live)'),
  memorySwap: field(emptyOr((v) => v.swapBehavior === undefined || v.swapBehavior === '' || v.swapBehavior === 'NoSwap'), 'pods get no swap'),
  logging: field(emptyOr((v) => v.format === undefined || v.format === '' || v.format === 'text'), "nodelet logs JSON lines at --log-level; the kubelet's text logging settings do not apply"),
};
