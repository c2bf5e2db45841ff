/**
 * The image store of the fake runtime (`fake-runtime.ts`). Like containerd, it resolves short
 * names (`busybox` → `docker.io/library/busybox:latest`) and finds an image by tag, digest or ID.
 */
import { createHash } from 'node:crypto';
import type { Image } from '../../cri/types.js';

const DEFAULT_REGISTRY = 'docker.io';

/** True when the first path component names a registry host rather than a Docker Hub user. */
function hasRegistryHost(name: string): boolean {
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const first = name.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost';
}

/**
 * The fully qualified form of an image reference, as containerd stores it:
 * `busybox` → `docker.io/library/busybox:latest`, `me/app:1` → `docker.io/me/app:1`.
 * IDs (`sha256:…`) are returned unchanged.
 */
export function normalizeImageRef(ref: string): string {
  if (ref.startsWith('sha256:')) return ref;
  let name = ref;
  if (!hasRegistryHost(name)) name = name.includes('/') ? `${DEFAULT_REGISTRY}/${name}` : `${DEFAULT_REGISTRY}/library/${name}`;
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  const hasTagOrDigest = lastPart.includes(':') || name.includes('@');
  return hasTagOrDigest ? name : `${name}:latest`;
}

function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** Images by ID. Deterministic IDs and digests, derived from the normalized name. */
export class FakeImageStore {
  private readonly images = new Map<string, Image>();

  /** Adds (or returns the existing) image for `ref`; `user` is its USER as ImageStatus reports it (none: root). */
  add(ref: string, size = 1_000_000n, user: { readonly uid?: bigint; readonly username?: string; readonly pinned?: boolean } = {}): Image {
    const existing = this.find(ref);
    if (existing !== undefined) return existing;
    const name = normalizeImageRef(ref);
    const repo = name.replace(/[:@][^/]*$/, '');
    const image: Image = {
      id: sha256(`image ${name}`),
      repoTags: name.includes('@') ? [] : [name],
      repoDigests: [`${repo}@${sha256(`manifest ${name}`)}`],
      size,
      ...user,
    };
    this.images.set(image.id, image);
    return image;
  }

  /** The image a reference (tag, digest or ID, short or fully qualified) resolves to. */
  find(ref: string): Image | undefined {
    const name = normalizeImageRef(ref);
    for (const image of this.images.values()) {
      if (image.id === name || image.repoTags.includes(name) || image.repoDigests.includes(name)) return image;
    }
    return undefined;
  }

  /** Removes the image `ref` resolves to; false when there is none. */
  remove(ref: string): boolean {
    const image = this.find(ref);
    return image !== undefined && this.images.delete(image.id);
  }

  list(): Image[] {
    return [...this.images.values()];
  }
}
