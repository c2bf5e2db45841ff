/**
 * downwardAPI volumes and projections: files holding fields of the pod itself
 * (`pkg/volume/downwardapi`) and of its containers' resources (`resourceFieldRef`: limits and
 * requests of CPU and memory, an unset limit being the node's allocatable amount).
 */
import type { V1DownwardAPIVolumeFile, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import { resourceFieldValue, type NodeAllocatable } from '../model/resource-field.js';
import { formatMap } from '../../util/go-quote.js';
import { cleanPayloadPath, fileMode, type Payload } from './payload.js';

const SUBSCRIPTED = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/s;

type FieldReader = (pod: V1Pod) => string;

const FIELDS: Readonly<Record<string, FieldReader>> = {
  'metadata.name': (pod) => pod.metadata?.name ?? '',
  'metadata.namespace': (pod) => pod.metadata?.namespace ?? '',
  'metadata.uid': (pod) => pod.metadata?.uid ?? '',
  'metadata.labels': (pod) => formatMap(pod.metadata?.labels),
  'metadata.annotations': (pod) => formatMap(pod.metadata?.annotations),
  'spec.nodeName': (pod) => pod.spec?.nodeName ?? '',
  'spec.serviceAccountName': (pod) => pod.spec?.serviceAccountName ?? '',
};

/**
 * The text of one downward-API field of `pod`: `metadata.name|namespace|uid`,
 * `metadata.labels|annotations` (sorted `key="value"` lines), `metadata.labels['k']`,
 * `metadata.annotations['k']` (empty when absent), `spec.nodeName`, `spec.serviceAccountName`.
 * @throws Error for any other field path.
 */
export function podFieldValue(pod: V1Pod, fieldPath: string): string {
  const subscripted = SUBSCRIPTED.exec(fieldPath);
  if (subscripted !== null) {
    const map = subscripted[1] === 'metadata.labels' ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[subscripted[2] ?? ''] ?? '';
  }
  const read = Object.hasOwn(FIELDS, fieldPath) ? FIELDS[fieldPath] : undefined;
  if (read === undefined) throw new Error(`unsupported downward API field path "${fieldPath}"`);
  return read(pod);
}

/** What {@link downwardApiPayload} reads. */
export interface DownwardApiSource {
  readonly items: readonly V1DownwardAPIVolumeFile[] | undefined;
  readonly pod: V1Pod;
  /** The volume's (or projection's) `defaultMode`, already defaulted. */
  readonly defaultMode: number;
  /** The node's allocatable CPU and memory: the value of a limit a container does not set. */
  readonly allocatable: NodeAllocatable;
}

function containerResourceValue(source: DownwardApiSource, ref: V1ResourceFieldSelector): string {
  const spec = source.pod.spec;
  const container = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].find((c) => c.name === ref.containerName);
  if (container === undefined) throw new Error(`resourceFieldRef: container "${ref.containerName ?? ''}" is not in the pod`);
  return resourceFieldValue(container, ref.resource, ref.divisor, source.allocatable);
}

/**
 * The files of a downwardAPI volume or projection.
 * @throws Error for an unsupported field or resource, an unknown container, or an invalid path or mode.
 */
export function downwardApiPayload(source: DownwardApiSource): Payload {
  const payload: Payload = new Map();
  for (const item of source.items ?? []) {
    const target = cleanPayloadPath(item.path);
    let text: string;
    if (item.fieldRef !== undefined) {
      text = podFieldValue(source.pod, item.fieldRef.fieldPath);
    } else if (item.resourceFieldRef !== undefined) {
      text = containerResourceValue(source, item.resourceFieldRef);
    } else {
      throw new Error(`downward API item "${item.path}": neither fieldRef nor resourceFieldRef is set`);
    }
    payload.set(target, { data: Buffer.from(text), mode: fileMode(item.mode, source.defaultMode) });
  }
  return payload;
}
