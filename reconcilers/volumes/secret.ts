/** secret volumes and projections (`pkg/volume/secret`). */
import type { V1KeyToPath, V1Secret } from '@kubernetes/client-node';
import { keyedPayload } from './keyed-payload.js';
import type { Payload } from './payload.js';
import type { VolumeSourceApi } from './types.js';

/** The fields a secret volume source and a secret projection share (the volume says `secretName`). */
export interface SecretReference {
  readonly name: string;
  readonly items?: V1KeyToPath[];
  readonly optional?: boolean;
}

/** Where to read a secret from and how to project it. */
export interface SecretPayloadRequest {
  readonly api: VolumeSourceApi;
  readonly namespace: string;
  readonly source: SecretReference;
  /** The volume's (or projected volume's) `defaultMode`, already defaulted (0644, as for config maps). */
  readonly defaultMode: number;
}

/** `data` decoded from base64, by key. */
export function secretEntries(secret: V1Secret): Map<string, Buffer> {
  const entries = new Map<string, Buffer>();
  for (const [key, base64] of Object.entries(secret.data ?? {})) entries.set(key, Buffer.from(base64, 'base64'));
  return entries;
}

/**
 * Reads the secret and returns its files. A missing secret is an empty payload when the source is
 * optional.
 * @throws Error `secret "<name>" not found`, a missing-key error, or the API failure.
 */
export async function secretPayload(request: SecretPayloadRequest): Promise<Payload> {
  const { source } = request;
  const optional = source.optional ?? false;
  const secret = await request.api.readSecret(request.namespace, source.name);
  if (secret === undefined && !optional) throw new Error(`secret "${source.name}" not found`);
  return keyedPayload({
    kind: 'secret',
    entries: secret === undefined ? new Map() : secretEntries(secret),
    items: source.items,
    defaultMode: request.defaultMode,
    optional,
  });
}
