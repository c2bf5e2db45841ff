/** configMap volumes and projections (`pkg/volume/configmap`). */
import type { V1ConfigMap, V1KeyToPath } from '@kubernetes/client-node';
import { keyedPayload } from './keyed-payload.js';
import type { Payload } from './payload.js';
import type { VolumeSourceApi } from './types.js';

/** The fields a configMap volume source and a configMap projection share. */
export interface ConfigMapReference {
  readonly name?: string;
  readonly items?: V1KeyToPath[];
  readonly optional?: boolean;
}

/** Where to read a config map from and how to project it. */
export interface ConfigMapPayloadRequest {
  readonly api: VolumeSourceApi;
  readonly namespace: string;
  readonly source: ConfigMapReference;
  /** The volume's (or projected volume's) `defaultMode`, already defaulted. */
  readonly defaultMode: number;
}

/** `data` as UTF-8 and `binaryData` (base64 in the API object) as bytes, by key. */
export function configMapEntries(configMap: V1ConfigMap): Map<string, Buffer> {
  const entries = new Map<string, Buffer>();
  for (const [key, text] of Object.entries(configMap.data ?? {})) entries.set(key, Buffer.from(text, 'utf8'));
  for (const [key, base64] of Object.entries(configMap.binaryData ?? {})) entries.set(key, Buffer.from(base64, 'base64'));
  return entries;
}

/**
 * Reads the config map and returns its files. A missing config map is an empty payload when the
 * source is optional.
 * @throws Error `configmap "<name>" not found`, a missing-key error, or the API failure.
 */
export async function configMapPayload(request: ConfigMapPayloadRequest): Promise<Payload> {
  const { source } = request;
  const name = source.name ?? '';
  const optional = source.optional ?? false;
  const configMap = await request.api.readConfigMap(request.namespace, name);
  if (configMap === undefined && !optional) throw new Error(`configmap "${name}" not found`);
  return keyedPayload({
    kind: 'configmap',
    entries: configMap === undefined ? new Map() : configMapEntries(configMap),
    items: source.items,
    defaultMode: request.defaultMode,
    optional,
  });
}
