/**
 * What pulled each image, as the kubelet's `KubeletEnsureSecretPulledImages` keeps it
 * (`<root>/image_manager/pulled/`): for every image the node pulled, whether a pull without
 * credentials succeeded (then any pod may use it) and the hashes of the credentials that did. A pod
 * that would use a present image without pulling (`IfNotPresent`, `Never`) must hold one of those
 * credentials, or the image is pulled again with its own, which the registry refuses when it has
 * none (pull-verification.ts decides). Kept on disk, one file per image, so a restarted agent still
 * knows; an image nodelet never pulled (loaded by hand, pulled before this) has no record.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AuthConfig } from '../../cri/types.js';

/** What pulled one image. */
export interface PulledRecord {
  /** A pull without credentials succeeded: the image is public to this node. */
  readonly anonymous: boolean;
  /**
   * A pull with the node's own credentials (a credential provider plugin) succeeded: any pod of
   * the node may use it, as the kubelet's NodePodsAccessible.
   */
  readonly nodeWide: boolean;
  /** Hashes of the credentials that pulled it ({@link credentialHash}). */
  readonly credentialHashes: readonly string[];
}

/** A credential's identity, never the credential itself: SHA-256 over its registry and secrets. */
export function credentialHash(auth: AuthConfig): string {
  const parts = [auth.serverAddress ?? '', auth.username ?? '', auth.password ?? '', auth.auth ?? '', auth.identityToken ?? '', auth.registryToken ?? ''];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The records, by image ID, cached in memory and written through to `dir`. */
export class PulledRecords {
  private readonly cache = new Map<string, PulledRecord | undefined>();

  constructor(private readonly dir: string) {}

  private file(imageId: string): string {
    return path.join(this.dir, `${createHash('sha256').update(imageId).digest('hex')}.json`);
  }

  /** How many records are on disk (`kubelet_imagemanager_ondisk_pulledrecords`); 0 before the first pull made the directory. */
  async count(): Promise<number> {
    try {
      return (await readdir(this.dir)).filter((name) => name.endsWith('.json')).length;
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return 0;
      throw error;
    }
  }

  /** The record of an image, or undefined when nodelet never pulled it. */
  async get(imageId: string): Promise<PulledRecord | undefined> {
    if (this.cache.has(imageId)) return this.cache.get(imageId);
    let record: PulledRecord | undefined;
    try {
      const parsed = JSON.parse(await readFile(this.file(imageId), 'utf8')) as Partial<PulledRecord>;
      record = { anonymous: parsed.anonymous === true, nodeWide: parsed.nodeWide === true, credentialHashes: Array.isArray(parsed.credentialHashes) ? parsed.credentialHashes.filter((h): h is string => typeof h === 'string') : [] };
    } catch (error) {
      // Absent, or unreadable: treated as never pulled by nodelet (the policy decides what that means).
      if (!(error instanceof Error && ('code' in error || error instanceof SyntaxError))) throw error;
    }
    this.cache.set(imageId, record);
    return record;
  }

  /**
   * Adds one successful pull of `imageId`: anonymous (`auth` undefined), with a pod's `auth`, or
   * with the node's own (`nodeWide`: a credential provider's, kept as such, not by hash).
   */
  async recordPull(imageId: string, auth: AuthConfig | undefined, nodeWide = false): Promise<void> {
    const current = (await this.get(imageId)) ?? { anonymous: false, nodeWide: false, credentialHashes: [] };
    const hash = auth === undefined || nodeWide ? undefined : credentialHash(auth);
    const next: PulledRecord = {
      anonymous: current.anonymous || auth === undefined,
      nodeWide: current.nodeWide || (auth !== undefined && nodeWide),
      credentialHashes: hash === undefined || current.credentialHashes.includes(hash) ? current.credentialHashes : [...current.credentialHashes, hash],
    };
    const unchanged = next.anonymous === current.anonymous && next.nodeWide === current.nodeWide && next.credentialHashes === current.credentialHashes;
    if (unchanged && this.cache.get(imageId) !== undefined) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(imageId);
    await writeFile(`${file}.tmp`, JSON.stringify({ image: imageId, ...next }), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    this.cache.set(imageId, next);
  }
}
