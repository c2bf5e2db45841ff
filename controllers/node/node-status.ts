/**
 * The Node's status as a pure function of host facts, runtime state and the previously posted
 * status, after the kubelet's status setters: capacity and allocatable, addresses, nodeInfo,
 * daemon endpoints, the runtime's handlers, features and images, the node features nodelet
 * declares (what the scheduler's NodeDeclaredFeatures filter matches pods against), and the
 * conditions nodelet owns.
 */
import type { RuntimeFeatureSnapshot } from '../../reconcilers/runtime/runtime-features.js';
import { NODE_DECLARED_FEATURES } from '../../reconcilers/admission/declared-features.js';
import { allocatableOf, formatMilliCpu, NO_RESERVATIONS, type NodeResources, type Reservations } from './allocatable.js';
import type { V1ContainerImage, V1NodeCondition, V1NodeStatus, V1NodeSystemInfo } from '@kubernetes/client-node';
import { sameNodeImages } from './node-images.js';
import type { HostFacts } from './host-info.js';

/** The kubelet's default `--max-pods`. */
export const DEFAULT_MAX_PODS = 110;
/** The port the node server listens on, reported so the API server can proxy logs and exec. */
export const DEFAULT_KUBELET_PORT = 10250;

/** Whether the container runtime can run pods, with its own explanation when it cannot. */
export interface NodeReadiness {
  readonly ready: boolean;
  /** Machine-readable cause from the runtime, e.g. `NetworkPluginNotReady`; empty when ready. */
  readonly reason: string;
  /** Human-readable detail; empty when ready. */
  readonly message: string;
}

/** Inputs of {@link buildNodeStatus} besides the host facts. */
export interface BuildNodeStatusOptions {
  /** `<runtimeName>://<version>`; when unknown the previously reported value is kept. */
  readonly runtimeVersion: string | undefined;
  /** Reported as `kubeletVersion`, e.g. `v0.1.0-nodelet`. */
  readonly agentVersion: string;
  readonly nodeIp: string;
  readonly readiness: NodeReadiness;
  readonly maxPods?: number;
  /** Resources held back from pods; allocatable is capacity minus these. None when absent. */
  readonly reservations?: Reservations;
  readonly kubeletPort?: number;
  readonly now: Date;
  /** The status the API server holds now; conditions keep its lastTransitionTime if unchanged. */
  readonly previous?: V1NodeStatus | undefined;
  /** The pressure conditions the eviction manager raises now (none: all False). */
  readonly pressure?: readonly string[];
  /** What allocatable holds back from capacity (the hard eviction thresholds), in bytes. */
  readonly reserved?: { readonly memoryBytes: number; readonly ephemeralStorageBytes: number };
  /** The runtime's handlers and features: the Node's `runtimeHandlers` and `features`, as the kubelet's setters write them; absent, left as they are. */
  readonly runtimeFeatures?: RuntimeFeatureSnapshot;
  /**
   * The Node's `images` (`node-images.ts`); absent (the runtime could not list them), left as they
   * are. Written only when they differ from `previous.images`: a heartbeat does not resend them.
   */
  readonly images?: readonly V1ContainerImage[];
  /**
   * Device plugins' extended resources (`reconcilers/devices/`): capacity every device, allocatable
   * the healthy ones; a resource whose plugin is gone for good is 0 in both (kept, as the kubelet
   * keeps it, to tell it from cluster-level resources). None when absent.
   */
  readonly extendedResources?: { readonly capacity: Readonly<Record<string, number>>; readonly allocatable: Readonly<Record<string, number>> };
  /**
   * The volumes the volume manager uses or sets up (`kubernetes.io/csi/<driver>^<handle>`), which the
   * attach-detach controller must not detach and the kubelet's attach check waits to see
   * posted; absent: left as they are. Written in full (an empty list clears it).
   */
  readonly volumesInUse?: readonly string[];
}

/**
 * Formats a runtime version the way the kubelet's nodeInfo reports it: the runtime's version read
 * as a semantic version (`v2.4.2` → `2.4.2`, pre-release and build kept), else as a generic one
 * whose trailing text is dropped (Debian's `1.6.20~ds1` → `1.6.20`); an unparsable one as given.
 */
export function formatRuntimeVersion(version: { runtimeName: string; runtimeVersion: string }): string {
  return `${version.runtimeName}://${kubeletVersionString(version.runtimeVersion)}`;
}

/** k8s.io/apimachinery's util/version: ParseSemantic, else ParseGeneric, then String(). */
export function kubeletVersionString(raw: string): string {
  const match = /^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$/.exec(raw);
  if (match === null) return raw;
  const components = (match[1] ?? '').split('.');
  const extra = match[2] ?? '';
  const semantic = /^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$/.exec(extra);
  const numbers = components.map((c) => String(Number(c)));
  if (components.length === 3 && semantic !== null) return `${numbers.join('.')}${semantic[1] === undefined ? '' : `-${semantic[1]}`}${semantic[2] === undefined ? '' : `+${semantic[2]}`}`;
  return components.length >= 2 ? numbers.join('.') : raw;
}

/** Bytes as a Kubernetes quantity in Ki, rounded down (as the kubelet reports memory). */
export function bytesToKi(bytes: number): string {
  return `${Math.floor(bytes / 1024)}Ki`;
}

const DECIMAL_SUFFIXES = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

/** A whole number as a canonical DecimalSI quantity: `1500`, `64k`, `10G` (the largest suffix that keeps it whole). */
export function decimalQuantity(value: number): string {
  let mantissa = Math.max(0, Math.floor(value));
  let exponent = 0;
  while (mantissa !== 0 && mantissa % 1000 === 0 && exponent < DECIMAL_SUFFIXES.length - 1) {
    mantissa /= 1000;
    exponent += 1;
  }
  return `${mantissa}${DECIMAL_SUFFIXES[exponent] ?? ''}`;
}

interface ConditionInput {
  readonly type: string;
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

/**
 * One condition: the heartbeat is always `now`; the transition time moves only when the status
 * differs from what the API server holds (including a controller's `Unknown`).
 */
function condition(
  input: ConditionInput,
  now: Date,
  previous: readonly V1NodeCondition[] | undefined,
): V1NodeCondition {
  const before = previous?.find((c) => c.type === input.type);
  const unchanged = before?.status === input.status && before.lastTransitionTime !== undefined;
  return {
    ...input,
    lastHeartbeatTime: now,
    lastTransitionTime: unchanged ? before.lastTransitionTime : now,
  };
}

function readyCondition(readiness: NodeReadiness): ConditionInput {
  if (readiness.ready) {
    return { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'nodelet is posting ready status' };
  }
  const detail = [readiness.reason, readiness.message].filter((part) => part !== '').join(': ');
  return {
    type: 'Ready',
    status: 'False',
    reason: 'KubeletNotReady',
    message: detail === '' ? 'container runtime is not ready' : detail,
  };
}

/** The pressure conditions in the kubelet's words, False and True (the eviction manager decides which). */
const PRESSURE_CONDITIONS: readonly { readonly no: ConditionInput; readonly yes: ConditionInput }[] = [
  {
    no: { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'nodelet has sufficient memory available' },
    yes: { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory', message: 'nodelet has insufficient memory available' },
  },
  {
    no: { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'nodelet has no disk pressure' },
    yes: { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'nodelet has disk pressure' },
  },
  {
    no: { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'nodelet has sufficient PID available' },
    yes: { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'nodelet has insufficient PID available' },
  },
];

/**
 * A Node resource list: CPU in cores or millicores, memory in Ki (rounded down), ephemeral storage
 * in bytes as a decimal quantity (the kubelet's since 1.37: `EphemeralStorageCapacityFromFsInfo`
 * makes it DecimalSI).
 */
function resourceList(resources: NodeResources, pods: string): Record<string, string> {
  return {
    cpu: formatMilliCpu(resources.milliCpu),
    memory: bytesToKi(resources.memoryBytes),
    'ephemeral-storage': decimalQuantity(resources.ephemeralStorageBytes),
    pods,
  };
}

/** Device counts as quantities. */
function counts(amounts: Readonly<Record<string, number>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(amounts ?? {}).map(([name, n]) => [name, String(n)]));
}

function pressureConditions(pressure: readonly string[]): ConditionInput[] {
  return PRESSURE_CONDITIONS.map(({ no, yes }) => (pressure.includes(yes.type) ? yes : no));
}

/** The Node's system info; `runningInUserNamespace` is the kubelet's since 1.37 (KubeletInUserNamespace, beta on), newer than client-node's type. */
function nodeInfoOf(facts: HostFacts, options: BuildNodeStatusOptions): V1NodeSystemInfo {
  const info: V1NodeSystemInfo & { readonly runningInUserNamespace: boolean } = {
    machineID: facts.machineId,
    systemUUID: facts.systemUuid,
    bootID: facts.bootId,
    kernelVersion: facts.kernelVersion,
    osImage: facts.osImage,
    containerRuntimeVersion: options.runtimeVersion ?? options.previous?.nodeInfo?.containerRuntimeVersion ?? '',
    kubeletVersion: options.agentVersion,
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: facts.architecture,
    runningInUserNamespace: facts.runningInUserNamespace,
  };
  return info;
}

/** Builds the full status nodelet posts; every time in it is `now` truncated to whole seconds. */
export function buildNodeStatus(facts: HostFacts, options: BuildNodeStatusOptions): V1NodeStatus {
  // The API server stores condition times with second precision; truncating keeps round trips equal.
  const now = new Date(Math.floor(options.now.getTime() / 1000) * 1000);
  const previousConditions = options.previous?.conditions;
  const pods = String(options.maxPods ?? DEFAULT_MAX_PODS);
  const capacity = { milliCpu: facts.cpuCount * 1000, memoryBytes: facts.memoryBytes, ephemeralStorageBytes: facts.ephemeralStorageBytes };
  // The kubelet's allocatable: capacity less system-reserved and kube-reserved, less the hard
  // eviction thresholds of memory and the node filesystem.
  const reserved = allocatableOf(capacity, options.reservations ?? NO_RESERVATIONS);
  const evictionReserve = options.reserved ?? { memoryBytes: 0, ephemeralStorageBytes: 0 };
  const allocatable = {
    milliCpu: reserved.milliCpu,
    memoryBytes: Math.max(0, reserved.memoryBytes - evictionReserve.memoryBytes),
    ephemeralStorageBytes: Math.max(0, reserved.ephemeralStorageBytes - evictionReserve.ephemeralStorageBytes),
  };
  return {
    capacity: { ...resourceList(capacity, pods), ...counts(options.extendedResources?.capacity) },
    allocatable: { ...resourceList(allocatable, pods), ...counts(options.extendedResources?.allocatable) },
    addresses: [
      { type: 'InternalIP', address: options.nodeIp },
      { type: 'Hostname', address: facts.hostname },
    ],
    nodeInfo: nodeInfoOf(facts, options),
    conditions: [...pressureConditions(options.pressure ?? []), readyCondition(options.readiness)].map((input) =>
      condition(input, now, previousConditions),
    ),
    daemonEndpoints: { kubeletEndpoint: { Port: options.kubeletPort ?? DEFAULT_KUBELET_PORT } },
    // As the kubelet's setNodeStatus: the features admission checks pods against (NodeDeclaredFeatures, GA in 1.37).
    declaredFeatures: [...NODE_DECLARED_FEATURES],
    ...(options.runtimeFeatures === undefined ? {} : runtimeFeatureStatus(options.runtimeFeatures)),
    ...(options.images === undefined || sameNodeImages(options.images, options.previous?.images) ? {} : { images: [...options.images] }),
    ...(options.volumesInUse === undefined ? {} : { volumesInUse: [...options.volumesInUse] }),
  };
}

/** The kubelet's RuntimeHandlers and NodeFeatures setters: each handler as the runtime lists it, and the runtime-wide features. */
function runtimeFeatureStatus(snapshot: RuntimeFeatureSnapshot): Pick<V1NodeStatus, 'runtimeHandlers' | 'features'> {
  return {
    runtimeHandlers: snapshot.handlers.map((h) => ({ name: h.name, features: { recursiveReadOnlyMounts: h.recursiveReadOnlyMounts, userNamespaces: h.userNamespaces } })),
    features: { supplementalGroupsPolicy: snapshot.features.supplementalGroupsPolicy },
  };
}

/** The Ready condition of a status, if any. */
export function readyConditionOf(status: V1NodeStatus | undefined): V1NodeCondition | undefined {
  return status?.conditions?.find((c) => c.type === 'Ready');
}
