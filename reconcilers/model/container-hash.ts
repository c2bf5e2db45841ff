/**
 * A stable hash of the parts of a container spec that require a new container when they change.
 * Stored as an annotation on the CRI container so a restarted agent can tell whether a running
 * container still matches the pod's spec. Resource requirements are excluded, as in the kubelet,
 * so a resize never restarts a container.
 */
import { createHash } from 'node:crypto';
import type { V1Container } from '@kubernetes/client-node';

/** JSON with object keys sorted, so equal specs hash equal whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Hex hash of the container spec without its resources. */
export function hashContainerSpec(container: V1Container): string {
  const { resources: _resources, resizePolicy: _resizePolicy, ...rest } = container;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex').slice(0, 16);
}
