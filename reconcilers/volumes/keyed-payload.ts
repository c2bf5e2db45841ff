/**
 * The payload of a config map or secret (volume or projection): every key as a file named after it,
 * or only the listed `items` at their `path` (`pkg/volume/configmap` / `secret` `MakePayload`).
 */
import type { V1KeyToPath } from '@kubernetes/client-node';
import { cleanPayloadPath, fileMode, type Payload } from './payload.js';

/** What {@link keyedPayload} projects. */
export interface KeyedPayloadSource {
  /** Names the object in messages: `configmap` or `secret`. */
  readonly kind: 'configmap' | 'secret';
  /** Decoded contents by key (empty for a missing optional object). */
  readonly entries: ReadonlyMap<string, Buffer>;
  readonly items: readonly V1KeyToPath[] | undefined;
  /** The volume's (or projection's) `defaultMode`, already defaulted. */
  readonly defaultMode: number;
  /** With `optional`, an item naming a missing key is skipped instead of failing. */
  readonly optional: boolean;
}

/**
 * Maps the object's entries to files.
 * @throws Error when an item names a key the object lacks (and the source is not optional), or a
 *   path or mode is invalid.
 */
export function keyedPayload(source: KeyedPayloadSource): Payload {
  const payload: Payload = new Map();
  if (source.items === undefined || source.items.length === 0) {
    for (const [key, data] of source.entries) {
      payload.set(cleanPayloadPath(key), { data, mode: source.defaultMode });
    }
    return payload;
  }
  for (const item of source.items) {
    const data = source.entries.get(item.key);
    if (data === undefined) {
      if (source.optional) continue;
      throw new Error(`${source.kind} references non-existent ${source.kind === 'secret' ? 'secret' : 'config'} key: ${item.key}`);
    }
    payload.set(cleanPayloadPath(item.path), { data, mode: fileMode(item.mode, source.defaultMode) });
  }
  return payload;
}
