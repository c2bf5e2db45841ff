/**
 * The Node's `status.images`, as the kubelet's `Images` status setter writes them: the runtime's
 * images, largest first (the kubelet's image cache sorts them by size), at most
 * `nodeStatusMaxImages` (50 by default), each with up to five names, its digests before its tags.
 * The scheduler's ImageLocality scoring reads them.
 *
 * The kubelet refreshes its image list every 30 s; {@link CachedImageList} does the same, so the
 * 10 s heartbeat does not list the runtime's images each time.
 */
import type { V1ContainerImage } from '@kubernetes/client-node';
import type { Image } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';

/** The kubelet's default `nodeStatusMaxImages`. */
export const DEFAULT_NODE_STATUS_MAX_IMAGES = 50;
/** The kubelet's `MaxNamesPerImageInNodeStatus`. */
export const MAX_NAMES_PER_IMAGE = 5;
/** How long a listing serves (the kubelet's image cache period). */
export const IMAGE_LIST_PERIOD_MS = 30_000;

/** The images the Node reports; `maxImages` below 0 means all of them. */
export function nodeImagesOf(images: readonly Image[], maxImages = DEFAULT_NODE_STATUS_MAX_IMAGES): V1ContainerImage[] {
  const bySize = [...images].sort((a, b) => (a.size === b.size ? 0 : a.size > b.size ? -1 : 1));
  const kept = maxImages < 0 ? bySize : bySize.slice(0, maxImages);
  return kept.map((image) => ({ names: [...image.repoDigests, ...image.repoTags].slice(0, MAX_NAMES_PER_IMAGE), sizeBytes: Number(image.size) }));
}

/** Whether two image lists say the same (the heartbeat leaves an unchanged list out of its patch). */
export function sameNodeImages(a: readonly V1ContainerImage[] | undefined, b: readonly V1ContainerImage[] | undefined): boolean {
  const left = a ?? [];
  const right = b ?? [];
  // Field by field: the API server leaves out a zero size and an empty name list.
  return left.length === right.length && left.every((image, i) => sameImage(image, right[i]));
}

function sameImage(a: V1ContainerImage, b: V1ContainerImage | undefined): boolean {
  if (b === undefined || (a.sizeBytes ?? 0) !== (b.sizeBytes ?? 0)) return false;
  const names = a.names ?? [];
  const other = b.names ?? [];
  return names.length === other.length && names.every((n, i) => n === other[i]);
}

/** The runtime's image listing, as the node status needs it. */
export interface ImageLister {
  listImages(): Promise<Image[]>;
}

/** The runtime's images, listed at most once per {@link IMAGE_LIST_PERIOD_MS}. */
export class CachedImageList {
  private last: { readonly atMs: number; readonly images: readonly Image[] } | undefined;

  constructor(
    private readonly lister: ImageLister,
    private readonly clock: Clock,
  ) {}

  /** The last listing if it is recent enough, else a new one. @throws what the listing throws. */
  async images(): Promise<readonly Image[]> {
    const now = this.clock.now();
    if (this.last !== undefined && now - this.last.atMs < IMAGE_LIST_PERIOD_MS) return this.last.images;
    const images = await this.lister.listImages();
    this.last = { atMs: now, images };
    return images;
  }
}
