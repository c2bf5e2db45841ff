/**
 * Image garbage collection as pure functions (the kubelet's `image_gc_manager.go` in nodelet's
 * terms): the usage record of every image, which images to remove for having gone unused too long,
 * and which to remove when the image filesystem is too full.
 *
 * - Unused images: images no container uses (any state, any owner), not pinned by the runtime, not
 *   the sandbox (pause) image. Only they are ever removed.
 * - Unused for too long (kubelet `ImageMaximumGCAge`, its `freeOldImages`; 0 turns it off): an
 *   unused image last seen in use more than `maxAgeMs` ago is removed whatever the disk usage and
 *   whatever `minAgeMs`. An image never seen in use counts as unused since ever, as the kubelet's
 *   zero `lastUsed`: a pulled image no container has used yet goes at the next pass. Nothing goes
 *   until the collector has run for more than `maxAgeMs`: the records live in memory, so right
 *   after a restart "not seen in use" says nothing about the time before it.
 * - Disk usage is the filesystem's, as the kubelet computes it: `100 - available * 100 / capacity`
 *   (whole percents, rounded towards more usage), from `statfs` of the mountpoint `ImageFsInfo`
 *   names. At or above `highThresholdPercent`, enough bytes are freed to bring it to
 *   `lowThresholdPercent`: `capacity * (100 - low) / 100 - available`. A high threshold of 100
 *   disables this part (as the kubelet's configuration documents). Candidates are the unused images
 *   first seen at least `minAgeMs` ago (just pulled images are about to be used), least recently
 *   used first: an image never seen in use sorts before any that was, ties by when it was first
 *   seen. Removal stops once the freed sizes reach the target.
 */

/** What nodelet remembers of one image (kubelet `imageRecord`); kept in memory only. */
export interface ImageRecord {
  /** Clock time the image was first listed by this agent. */
  readonly firstSeenMs: number;
  /** Clock time it was last seen in use by a container; undefined when never. */
  readonly lastUsedMs?: number;
}

/** One image as the plan sees it. */
export interface GcImage {
  readonly id: string;
  /** Tags and digests, for logs and for recognising the sandbox image. */
  readonly names: readonly string[];
  readonly sizeBytes: number;
  readonly pinned: boolean;
  readonly inUse: boolean;
  readonly record: ImageRecord;
}

export interface ImageGcPolicy {
  readonly highThresholdPercent: number;
  readonly lowThresholdPercent: number;
  /** Images first seen less than this ago are never removed for disk usage (kubelet `ImageMinimumGCAge`, 2 min). */
  readonly minAgeMs: number;
  /** Unused images last seen in use more than this ago are removed whatever the usage (kubelet `ImageMaximumGCAge`); 0: never. */
  readonly maxAgeMs: number;
}

export interface ImageFsStats {
  readonly capacityBytes: number;
  readonly availableBytes: number;
}

export interface ImageGcInput {
  readonly images: readonly GcImage[];
  readonly fs: ImageFsStats;
  readonly policy: ImageGcPolicy;
  readonly nowMs: number;
  /** References of the sandbox image (`--pod-infra-container-image`): never removed. */
  readonly sandboxImage: string;
}

export interface ImageGcPlan {
  /** The filesystem's usage in whole percents. */
  readonly usagePercent: number;
  /** Bytes to free to reach the low threshold; 0 below the high threshold. */
  readonly bytesToFree: number;
  /** Images to remove, in order. */
  readonly remove: readonly GcImage[];
  /** Sum of the sizes of `remove`. */
  readonly bytesFreed: number;
}

/** The filesystem's usage in whole percents, as the kubelet computes it. */
export function usagePercent(fs: ImageFsStats): number {
  if (fs.capacityBytes <= 0) return 0;
  const available = Math.min(fs.availableBytes, fs.capacityBytes);
  return 100 - Math.floor((available * 100) / fs.capacityBytes);
}

/** LRU order: never used before used, then older use first, then first seen earlier. */
function lruOrder(a: GcImage, b: GcImage): number {
  const used = (a.record.lastUsedMs ?? -1) - (b.record.lastUsedMs ?? -1);
  return used !== 0 ? used : a.record.firstSeenMs - b.record.firstSeenMs;
}

/** Not used by any container, not pinned, not the sandbox image. */
function isUnused(image: GcImage, sandboxImage: string): boolean {
  if (image.inUse || image.pinned) return false;
  return image.id !== sandboxImage && !image.names.includes(sandboxImage);
}

function isCandidate(image: GcImage, input: ImageGcInput): boolean {
  return isUnused(image, input.sandboxImage) && input.nowMs - image.record.firstSeenMs >= input.policy.minAgeMs;
}

/** Which images to remove now (none below the high threshold). */
export function planImageGc(input: ImageGcInput): ImageGcPlan {
  const usage = usagePercent(input.fs);
  const { highThresholdPercent: high, lowThresholdPercent: low } = input.policy;
  if (high >= 100 || usage < high) return { usagePercent: usage, bytesToFree: 0, remove: [], bytesFreed: 0 };
  const available = Math.min(input.fs.availableBytes, input.fs.capacityBytes);
  const bytesToFree = Math.max(0, Math.floor((input.fs.capacityBytes * (100 - low)) / 100) - available);
  const remove: GcImage[] = [];
  let bytesFreed = 0;
  for (const image of input.images.filter((i) => isCandidate(i, input)).sort(lruOrder)) {
    if (bytesFreed >= bytesToFree) break;
    remove.push(image);
    bytesFreed += image.sizeBytes;
  }
  return { usagePercent: usage, bytesToFree, remove, bytesFreed };
}

export interface OldImagesInput {
  readonly images: readonly GcImage[];
  /** `ImageGcPolicy.maxAgeMs`; 0: nothing is removed for age. */
  readonly maxAgeMs: number;
  readonly nowMs: number;
  /** When the collector started keeping records (the kubelet's `beganGC`). */
  readonly startedMs: number;
  readonly sandboxImage: string;
}

/** Unused images last seen in use more than `maxAgeMs` ago (or never), once the collector has run longer than that. */
export function planOldImages(input: OldImagesInput): GcImage[] {
  const { maxAgeMs, nowMs } = input;
  if (maxAgeMs <= 0 || nowMs - input.startedMs <= maxAgeMs) return [];
  return input.images.filter((image) => {
    const lastUsed = image.record.lastUsedMs;
    return isUnused(image, input.sandboxImage) && (lastUsed === undefined || nowMs - lastUsed > maxAgeMs);
  });
}

/**
 * Updates the usage records from one listing (kubelet `detectImages`): a new image is first seen
 * now; an image in use was last used now; an image no longer listed is forgotten.
 */
export function updateImageRecords(
  records: ReadonlyMap<string, ImageRecord>,
  listing: readonly { readonly id: string; readonly inUse: boolean }[],
  nowMs: number,
): Map<string, ImageRecord> {
  const next = new Map<string, ImageRecord>();
  for (const { id, inUse } of listing) {
    const known = records.get(id) ?? { firstSeenMs: nowMs };
    next.set(id, inUse ? { ...known, lastUsedMs: nowMs } : known);
  }
  return next;
}
