/**
 * What a pod asks of the node, as the kubelet and the scheduler count it (resourcehelper's
 * `PodRequests`): the app containers' requests summed, restartable init containers (sidecars)
 * added to that sum, and the whole at least as large as any regular init container's request
 * plus the sidecars started before it (init containers run one at a time, sidecars keep running);
 * pod-level requests (`spec.resources`) replace the containers' for CPU and memory; the pod's
 * `overhead` is added last.
 *
 * Amounts are numbers keyed by resource name: CPU in millicores, everything else in base units.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseMilliCpu, parseQuantity } from '../model/quantity.js';

/** Resource name → amount (CPU in millicores, other resources in base units). */
export type ResourceAmounts = Map<string, number>;

/** Pod-level requests replace the containers' for these resources only. */
const POD_LEVEL_RESOURCES: ReadonlySet<string> = new Set(['cpu', 'memory']);

/** One quantity in the unit nodelet counts it in. */
export function amountOf(name: string, quantity: string | number): number {
  return name === 'cpu' ? parseMilliCpu(quantity) : parseQuantity(quantity);
}

/** A resource list (`{cpu: '500m'}`) as amounts; absent lists are empty. */
export function amountsOf(list: Readonly<Record<string, string | number>> | undefined): ResourceAmounts {
  const amounts: ResourceAmounts = new Map();
  for (const [name, quantity] of Object.entries(list ?? {})) amounts.set(name, amountOf(name, quantity));
  return amounts;
}

function add(into: ResourceAmounts, more: ResourceAmounts): void {
  for (const [name, amount] of more) into.set(name, (into.get(name) ?? 0) + amount);
}

function maxInto(into: ResourceAmounts, other: ResourceAmounts): void {
  for (const [name, amount] of other) into.set(name, Math.max(into.get(name) ?? 0, amount));
}

function requestsOf(container: V1Container): ResourceAmounts {
  return amountsOf(container.resources?.requests);
}

function limitsOf(container: V1Container): ResourceAmounts {
  return amountsOf(container.resources?.limits);
}

/** The containers' share: app containers and sidecars summed, at least the largest init step. */
function containerAmounts(pod: V1Pod, amountsOfContainer: (c: V1Container) => ResourceAmounts): ResourceAmounts {
  const total: ResourceAmounts = new Map();
  for (const container of pod.spec?.containers ?? []) add(total, amountsOfContainer(container));
  const sidecars: ResourceAmounts = new Map();
  const initPeak: ResourceAmounts = new Map();
  for (const container of pod.spec?.initContainers ?? []) {
    const own = amountsOfContainer(container);
    if (container.restartPolicy === 'Always') {
      add(total, own);
      add(sidecars, own);
      maxInto(initPeak, sidecars);
    } else {
      // A regular init container runs beside every sidecar started before it.
      const step: ResourceAmounts = new Map(own);
      add(step, sidecars);
      maxInto(initPeak, step);
    }
  }
  maxInto(total, initPeak);
  return total;
}

/** The pod's effective requests; see this file's header. */
export function podRequests(pod: V1Pod): ResourceAmounts {
  const total = containerAmounts(pod, requestsOf);
  for (const [name, amount] of amountsOf(pod.spec?.resources?.requests)) {
    if (POD_LEVEL_RESOURCES.has(name)) total.set(name, amount);
  }
  add(total, amountsOf(pod.spec?.overhead));
  return total;
}

/**
 * The pod's effective limits (resourcehelper's `PodLimits`): the containers' limits aggregated as
 * requests are (a resource no container limits is absent), pod-level limits for CPU and memory,
 * and the `overhead` added only to a limit that is set and not zero.
 */
export function podLimits(pod: V1Pod): ResourceAmounts {
  const total = containerAmounts(pod, limitsOf);
  for (const [name, amount] of amountsOf(pod.spec?.resources?.limits)) {
    if (POD_LEVEL_RESOURCES.has(name)) total.set(name, amount);
  }
  for (const [name, amount] of amountsOf(pod.spec?.overhead)) {
    const limit = total.get(name);
    if (limit !== undefined && limit !== 0) total.set(name, limit + amount);
  }
  return total;
}
