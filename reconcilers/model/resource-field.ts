/**
 * The value of a downward-API `resourceFieldRef` (environment variables and downwardAPI volume
 * files alike), as the kubelet's `ExtractResourceValueByContainerNameAndNodeAllocatable`: a limit the
 * container does not set is the node's allocatable amount; a request it does not set is 0; a zero
 * divisor (the API server's default, "0") means 1; CPU and memory round up.
 */
import type { V1Container } from '@kubernetes/client-node';
import { parseMilliCpu, parseQuantity } from './quantity.js';

/** The node's allocatable CPU and memory, which stand in for limits a container does not set. */
export interface NodeAllocatable {
  readonly milliCpu: number;
  readonly memoryBytes: number;
}

/** Thrown for a resource nodelet does not expose (`limits.ephemeral-storage`, hugepages, …). */
export class UnsupportedResourceFieldError extends Error {
  override readonly name = 'UnsupportedResourceFieldError';
}

export function isUnsupportedResourceFieldError(err: unknown): err is UnsupportedResourceFieldError {
  return err instanceof UnsupportedResourceFieldError;
}

const SUPPORTED = /^(limits|requests)\.(cpu|memory)$/;

function parseResource(resource: string): { isLimit: boolean; name: 'cpu' | 'memory' } {
  const m = SUPPORTED.exec(resource);
  if (m === null) throw new UnsupportedResourceFieldError(`unsupported resourceFieldRef resource "${resource}"`);
  return { isLimit: m[1] === 'limits', name: m[2] === 'cpu' ? 'cpu' : 'memory' };
}

function divisorOf(divisor: string | undefined): number {
  const parsed = divisor === undefined ? 0 : parseQuantity(divisor);
  return parsed === 0 ? 1 : parsed;
}

/** The text of `resource` (`limits.cpu`, `requests.memory`, …) of `container`. */
export function resourceFieldValue(container: V1Container | undefined, resource: string, divisor: string | undefined, allocatable: NodeAllocatable): string {
  const { isLimit, name } = parseResource(resource);
  const raw = (isLimit ? container?.resources?.limits : container?.resources?.requests)?.[name];
  const div = divisorOf(divisor);
  if (name === 'cpu') {
    const unset = isLimit ? allocatable.milliCpu : 0;
    // In millicores, as the kubelet divides MilliValue()s: no floating error for "1m" divisors.
    return String(Math.ceil((raw === undefined ? unset : parseMilliCpu(raw)) / Math.round(div * 1000)));
  }
  const unset = isLimit ? allocatable.memoryBytes : 0;
  return String(Math.ceil((raw === undefined ? unset : parseQuantity(raw)) / div));
}
