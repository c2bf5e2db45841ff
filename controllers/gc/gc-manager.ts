/**
 * Node-wide garbage collection (the kubelet's container GC, every minute, and image GC, every five
 * minutes): reads the runtime and the desired-pod store, decides with the pure plans
 * (`container-gc-plan.ts`, `image-gc-plan.ts`) and removes.
 *
 * - Container GC: dead container instances beyond the policy (with their log files and log links),
 *   older sandboxes that are not ready and hold no container, the log directories of pods that
 *   exist nowhere (not in any synced source, nothing left in the runtime, and the API confirms it),
 *   and dangling container log links into nodelet's pod log directory (`log-link-gc-plan.ts`). Pods
 *   gone from every source that still have runtime objects are handed to the reconciler, which is
 *   the one place a pod is torn down.
 * - Orphaned pod directories (`<rootDir>/pods/<uid>`) by the same checks as log directories, after
 *   unmounting nodelet's own emptyDir tmpfs mounts in them (`orphan-pod-dir-plan.ts`).
 * - Image GC: first unused images not seen in use for longer than the maximum age (when one is set,
 *   once the manager has run that long), whatever the disk usage; then, when the image filesystem
 *   (measured after those removals) is at or above the high threshold, unused images, least
 *   recently used first, down to the low threshold. "In use" means used by any container in the
 *   runtime, nodelet's or not, in any state: a shared runtime's other users keep their images.
 *   Each removal is logged with its reason and counted (`kubelet_image_garbage_collected_total`,
 *   `reason` `age` or `space`).
 * - A removal that fails is logged and tried again next time; the run then counts as failed (the
 *   loop backs off and the failure is visible), the other removals of the run still happen.
 * - A new policy (flags, then NodeAgent `spec.gc`) takes effect at once: both collections run.
 */
import type { Logger } from 'pino';
import type { Container, ImageService, RuntimeService } from '../../cri/types.js';
import { isCriNotFound } from '../../cri/errors.js';
import { ANNOTATION_RESTART_COUNT, imageVolumeRefs, LABEL_CONTAINER_NAME, LABEL_NODE, LABEL_POD_NAME, LABEL_POD_NAMESPACE, LABEL_POD_UID, intAnnotation, nodeSelector } from '../../reconcilers/model/runtime-labels.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { PodKey } from '../../util/pod-key.js';
import { planContainerGc, type ContainerGcPolicy, type GcContainer, type GcSandbox, type PodPresence } from './container-gc-plan.js';
import { planImageGc, planOldImages, updateImageRecords, type GcImage, type ImageFsStats, type ImageGcPolicy, type ImageRecord } from './image-gc-plan.js';
import { filesystemStats, listLogLinks, listPodLogDirectories, removePodLogDirectory, type PodLogDirectory } from './log-files.js';
import { removeContainerLogs } from '../../reconcilers/model/container-logs.js';
import { removeContainerLogLink, removeLogLinkNamed } from '../../reconcilers/model/container-log-links.js';
import type { LogLinkOwner } from '../../reconcilers/model/log-link-names.js';
import { planLogLinkGc } from './log-link-gc-plan.js';
import { planOrphanPodDirs } from './orphan-pod-dir-plan.js';
import { listPodDirs, removePodDir, type MountTable } from './pod-dirs.js';
import { readMounts, unmountAllUnder } from '../../reconcilers/volumes/mounts-table.js';
import type { OrphanPass } from '../../reconcilers/cgroups/pod-cgroups.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** The pod cgroups' orphan pass (`reconcilers/cgroups/pod-cgroups.ts`). */
export interface OrphanPodCgroups {
  /** Removes the cgroups of pods that are not active and have nothing running in `running`. */
  removeOrphansExcept(running: ReadonlySet<string>): Promise<OrphanPass>;
}

/** The kubelet's periods. */
export const CONTAINER_GC_PERIOD_MS = 60_000;
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/** Why an image was removed: the kubelet's `reason` label of `kubelet_image_garbage_collected_total`. */
export type ImageGcReason = 'age' | 'space';

/** Counts removed images (`kubelet_image_garbage_collected_total`). */
export interface ImageGcMetrics {
  imageRemoved(reason: ImageGcReason): void;
}

/** Container and image policy together (flags, overridden by NodeAgent `spec.gc`). */
export interface GcPolicy {
  readonly container: ContainerGcPolicy;
  readonly image: ImageGcPolicy;
}

/** What GC asks of the desired-pod store (the reconciler's `PodStore`). */
export interface GcPodSource {
  /** Whether some source has the pod. */
  has(uid: string): boolean;
  /** True once every source has delivered a full list. */
  synced(): boolean;
  /** Asks every source's origin whether the pod is really gone. */
  confirmGone(key: PodKey): Promise<boolean>;
}

export interface GcManagerOptions {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly nodeName: string;
  readonly podLogDir: string;
  /** The container log links' directory (`--container-log-link-dir`): a removed container's link goes, and dangling links into `podLogDir`. */
  readonly containerLogLinkDir: string;
  /** The agent's root directory: pod directories are `<rootDir>/pods/<uid>`. */
  readonly rootDir: string;
  readonly pods: GcPodSource;
  /** Hands a pod gone from every source to the reconciler (enqueue it). */
  readonly podEvents: PodEventSink;
  /** The sandbox (pause) image reference: never removed. */
  readonly sandboxImage: string;
  readonly policy: GcPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  /** `statfs` of the image filesystem's mountpoint; injectable for tests. */
  readonly fsStats?: (mountpoint: string) => Promise<ImageFsStats>;
  /** The host's mount table (`/proc/self/mountinfo`, `umount`); injectable for tests. */
  readonly mounts?: MountTable;
  readonly containerPeriodMs?: number;
  readonly imagePeriodMs?: number;
  /** Pod cgroups to collect on each container pass (once every source synced); none when absent. */
  readonly podCgroups?: OrphanPodCgroups;
  /** Counts removed images; not counted when absent. */
  readonly metrics?: ImageGcMetrics;
}

/** Thrown at the end of a run in which some removals failed (each was logged). */
export class GcRemovalError extends Error {
  constructor(readonly what: string, readonly failures: number) {
    super(`${what}: ${failures} removal(s) failed`);
    this.name = 'GcRemovalError';
  }
}

export function isGcRemovalError(err: unknown): err is GcRemovalError {
  return err instanceof GcRemovalError;
}

function podKeyOfLabels(labels: Readonly<Record<string, string>>): PodKey {
  return { uid: labels[LABEL_POD_UID] ?? '', namespace: labels[LABEL_POD_NAMESPACE] ?? '', name: labels[LABEL_POD_NAME] ?? '' };
}

function nanosToMs(nanos: bigint): number {
  return Number(nanos / 1_000_000n);
}

function gcContainer(c: Container): GcContainer {
  return {
    id: c.id,
    podUid: c.labels[LABEL_POD_UID] ?? '',
    name: c.labels[LABEL_CONTAINER_NAME] ?? c.metadata.name,
    sandboxId: c.podSandboxId,
    state: c.state,
    createdAtMs: nanosToMs(c.createdAt),
    attempt: intAnnotation(c.annotations, ANNOTATION_RESTART_COUNT, c.metadata.attempt),
  };
}

/** Image references any container uses (ID and the name it was created from, and its image volumes'). */
function imagesInUse(containers: readonly Container[]): Set<string> {
  return new Set(containers.flatMap((c) => [c.imageRef, c.image.image, ...imageVolumeRefs(c.annotations)]).filter((ref) => ref !== ''));
}

export class GcManager {
  private policy: GcPolicy;
  private imageRecords = new Map<string, ImageRecord>();
  /** Since when image records are kept (the kubelet's `beganGC`): the maximum age counts from here. */
  private startedMs: number;
  private readonly containerLoop: PeriodicLoop;
  private readonly imageLoop: PeriodicLoop;
  private readonly fsStats: (mountpoint: string) => Promise<ImageFsStats>;
  private readonly mounts: MountTable;

  constructor(private readonly options: GcManagerOptions) {
    this.policy = options.policy;
    this.startedMs = options.clock.now();
    this.fsStats = options.fsStats ?? filesystemStats;
    this.mounts = options.mounts ?? { read: readMounts, unmount: unmountAllUnder };
    const common = { clock: options.clock, logger: options.logger, firstRun: 'after-period' as const };
    this.containerLoop = createPeriodicLoop({ ...common, name: 'container-gc', periodMs: options.containerPeriodMs ?? CONTAINER_GC_PERIOD_MS, run: () => this.collectContainers() });
    this.imageLoop = createPeriodicLoop({ ...common, name: 'image-gc', periodMs: options.imagePeriodMs ?? IMAGE_GC_PERIOD_MS, run: () => this.collectImages() });
  }

  /** Starts both collections; each first runs one period after start (the agent settles first). */
  start(): void {
    this.startedMs = this.options.clock.now();
    this.containerLoop.start();
    this.imageLoop.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.containerLoop.stop(), this.imageLoop.stop()]);
  }

  /** The policy in effect. */
  currentPolicy(): GcPolicy {
    return this.policy;
  }

  /** Applies a new policy and runs both collections with it. */
  setPolicy(policy: GcPolicy): void {
    this.policy = policy;
    void this.containerLoop.runNow();
    void this.imageLoop.runNow();
  }

  /** Runs container GC now (after a run in flight); true when it succeeded. */
  runContainerGcNow(): Promise<boolean> {
    return this.containerLoop.runNow();
  }

  /** Runs image GC now (after a run in flight); true when it succeeded. */
  runImageGcNow(): Promise<boolean> {
    return this.imageLoop.runNow();
  }

  private presence(uid: string): PodPresence {
    if (this.options.pods.has(uid)) return 'present';
    return this.options.pods.synced() ? 'gone' : 'unknown';
  }

  /** One container GC pass (also refreshes the images' last-used records). */
  async collectContainers(): Promise<void> {
    const { runtime, nodeName } = this.options;
    const [sandboxes, everyContainer] = await Promise.all([runtime.listPodSandbox({ labelSelector: nodeSelector(nodeName) }), runtime.listContainers()]);
    await this.detectImages(everyContainer);
    const ours = everyContainer.filter((c) => c.labels[LABEL_NODE] === nodeName);
    const gcSandboxes: GcSandbox[] = sandboxes.map((s) => ({ id: s.id, podUid: s.metadata.uid, state: s.state, createdAtMs: nanosToMs(s.createdAt), attempt: s.metadata.attempt }));
    const plan = planContainerGc({ containers: ours.map(gcContainer), sandboxes: gcSandboxes, policy: this.policy.container, nowMs: this.options.clock.now(), presence: (uid) => this.presence(uid) });
    let failures = 0;
    for (const { container, reason } of plan.containers) failures += await this.removeContainer(container, reason);
    for (const { sandbox, reason } of plan.sandboxes) failures += await this.attempt({ sandboxId: sandbox.id, podUid: sandbox.podUid, reason }, 'removing sandbox', () => runtime.removePodSandbox(sandbox.id));
    this.handOverGonePods(plan.gonePods, [...ours.map((c) => c.labels), ...sandboxes.map((s) => s.labels)]);
    const present = new Set([...ours.flatMap((c) => c.labels[LABEL_POD_UID] ?? []), ...sandboxes.map((s) => s.metadata.uid)]);
    const logDirs = await listPodLogDirectories(this.options.podLogDir);
    failures += await this.collectOrphanedPodDirs(present, logDirs);
    failures += await this.collectPodLogDirectories(present, logDirs);
    failures += await this.collectPodCgroups(ours, sandboxes);
    failures += await this.collectLogLinks(everyContainer);
    if (failures > 0) throw new GcRemovalError('container GC', failures);
  }

  private async removeContainer(container: GcContainer, reason: string): Promise<number> {
    const fields = { containerId: container.id, podUid: container.podUid, container: container.name, reason };
    return this.attempt(fields, 'removing dead container', async () => {
      const { logPath, linkOwner } = await this.logsOf(container.id);
      await this.options.runtime.removeContainer(container.id);
      const files = await removeContainerLogs(this.options.podLogDir, logPath);
      // After the container (the kubelet removes it before): a link that cannot go now dangles, and
      // the link pass removes it once it can, its container being gone.
      const link = linkOwner === undefined ? false : await removeContainerLogLink(this.options.containerLogLinkDir, linkOwner);
      this.options.logger.info({ ...fields, logFiles: files, logLink: link }, 'removed dead container');
    });
  }

  /** The container's log file and whose link it has (from its labels, as the kubelet's); nothing when the runtime no longer has it. */
  private async logsOf(containerId: string): Promise<{ logPath: string; linkOwner?: LogLinkOwner }> {
    try {
      const status = await this.options.runtime.containerStatus(containerId);
      const { labels } = status;
      const linkOwner = { podName: labels[LABEL_POD_NAME] ?? '', podNamespace: labels[LABEL_POD_NAMESPACE] ?? '', containerName: labels[LABEL_CONTAINER_NAME] ?? status.metadata.name, containerId };
      return { logPath: status.logPath, linkOwner };
    } catch (err: unknown) {
      if (isCriNotFound(err)) return { logPath: '' };
      throw err;
    }
  }

  /**
   * Removes the dangling log links into nodelet's pod log directory whose containers are gone or
   * exited (`log-link-gc-plan.ts`); `containers` is every container of the runtime, listed at the
   * start of the pass.
   */
  private async collectLogLinks(containers: readonly Container[]): Promise<number> {
    const dir = this.options.containerLogLinkDir;
    const plan = planLogLinkGc({ dir, entries: await listLogLinks(dir), podLogDir: this.options.podLogDir, containers });
    let failures = 0;
    for (const { name, reason } of plan.remove) {
      failures += await this.attempt({ path: name, reason }, 'removing dangling container log link', async () => {
        if (await removeLogLinkNamed(dir, name)) this.options.logger.info({ dir, link: name, reason }, 'removed dangling container log link');
      });
    }
    for (const { name, reason } of plan.keep) this.options.logger.debug({ dir, link: name, reason }, 'dangling container log link kept');
    return failures;
  }

  private handOverGonePods(uids: readonly string[], labels: readonly Readonly<Record<string, string>>[]): void {
    for (const uid of uids) {
      const key = podKeyOfLabels(labels.find((l) => l[LABEL_POD_UID] === uid) ?? { [LABEL_POD_UID]: uid });
      this.options.podEvents.emit({ kind: 'remains-found', key });
    }
  }

  /** Removes log directories of pods no source has, nothing in the runtime has, and the API confirms gone. */
  private async collectPodLogDirectories(inRuntime: ReadonlySet<string>, logDirs: readonly PodLogDirectory[]): Promise<number> {
    if (!this.options.pods.synced()) return 0;
    let failures = 0;
    for (const dir of logDirs) {
      if (this.options.pods.has(dir.pod.uid) || inRuntime.has(dir.pod.uid)) continue;
      if (!(await this.options.pods.confirmGone(dir.pod))) continue;
      failures += await this.attempt({ path: dir.path, podUid: dir.pod.uid }, 'removing the log directory of a pod that no longer exists', async () => {
        await removePodLogDirectory(dir);
        this.options.logger.info({ path: dir.path, podUid: dir.pod.uid }, 'removed the log directory of a pod that no longer exists');
      });
    }
    return failures;
  }

  /**
   * Removes pod directories (`<rootDir>/pods/<uid>`) of pods no source has, nothing in the runtime
   * has, and the API confirms gone (the same checks as for log directories; the pod's name comes
   * from its log directory, else the API is asked by UID), unmounting nodelet's own tmpfs mounts
   * first. Orphans with other mounts or other tools' volume directories inside stay, logged as errors.
   */
  private async collectOrphanedPodDirs(inRuntime: ReadonlySet<string>, logDirs: readonly PodLogDirectory[]): Promise<number> {
    const { pods, logger } = this.options;
    if (!pods.synced()) return 0;
    const dirs = await listPodDirs(this.options.rootDir);
    if (dirs.length === 0) return 0;
    const plan = planOrphanPodDirs({ dirs, mounts: await this.mounts.read(), synced: pods.synced(), known: (uid) => pods.has(uid), inRuntime });
    for (const { dir, reason } of plan.skip) logger.error({ path: dir.path, podUid: dir.uid, reason }, 'orphaned pod directory kept');
    let failures = 0;
    let removed = 0;
    for (const { dir, unmount } of plan.remove) {
      const key = logDirs.find((l) => l.pod.uid === dir.uid)?.pod ?? { uid: dir.uid, namespace: '', name: '' };
      if (!(await pods.confirmGone(key))) continue;
      const failed = await this.attempt({ path: dir.path, podUid: dir.uid }, 'removing the orphaned directory of a pod that no longer exists', async () => {
        await removePodDir(this.mounts, dir.path, unmount);
        logger.info({ path: dir.path, podUid: dir.uid, unmounted: unmount }, 'removed the orphaned directory of a pod that no longer exists');
      });
      failures += failed;
      removed += 1 - failed;
    }
    const counts = { removed, kept: plan.skip.length, failed: failures };
    if (removed + plan.skip.length + failures > 0) logger.info(counts, 'orphaned pod directories');
    return failures;
  }

  /**
   * Pod cgroups of pods that are not active and have nothing running (a ready sandbox, a running
   * container): the kubelet's `cleanupOrphanedPodCgroups`. Only after every source synced.
   */
  private async collectPodCgroups(containers: readonly Container[], sandboxes: readonly { metadata: { uid: string }; state: string }[]): Promise<number> {
    const cgroups = this.options.podCgroups;
    if (cgroups === undefined || !this.options.pods.synced()) return 0;
    const running = new Set([
      ...containers.filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED').flatMap((c) => c.labels[LABEL_POD_UID] ?? []),
      ...sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => s.metadata.uid),
    ]);
    const pass = await cgroups.removeOrphansExcept(running);
    if (pass.removed + pass.failed > 0) this.options.logger.info(pass, 'orphaned pod cgroups');
    return pass.failed;
  }

  /** Runs one removal; 1 when it failed (logged), 0 when it succeeded. */
  private async attempt(fields: Record<string, unknown>, what: string, action: () => Promise<void>): Promise<number> {
    try {
      await action();
      return 0;
    } catch (err: unknown) {
      this.options.logger.warn({ ...fields, err }, `${what} failed`);
      return 1;
    }
  }

  private async detectImages(containers: readonly Container[]): Promise<GcImage[]> {
    const used = imagesInUse(containers);
    const images = await this.options.images.listImages();
    const listing = images.map((image) => ({ image, names: [...image.repoTags, ...image.repoDigests] }));
    const withUse = listing.map((l) => ({ ...l, inUse: used.has(l.image.id) || l.names.some((n) => used.has(n)) }));
    this.imageRecords = updateImageRecords(this.imageRecords, withUse.map((l) => ({ id: l.image.id, inUse: l.inUse })), this.options.clock.now());
    return withUse.map(({ image, names, inUse }) => ({
      id: image.id,
      names,
      sizeBytes: Number(image.size),
      pinned: image.pinned === true,
      inUse,
      record: this.imageRecords.get(image.id) ?? { firstSeenMs: this.options.clock.now() },
    }));
  }

  /** One image GC pass: images unused for too long, then disk usage. */
  async collectImages(): Promise<void> {
    const images = await this.detectImages(await this.options.runtime.listContainers());
    const old = await this.removeOldImages(images);
    // Measured after the age removals, as the kubelet does: they may have freed enough.
    const imageFs = (await this.options.images.imageFsInfo())[0];
    if (imageFs === undefined) {
      this.options.logger.warn('image GC: the runtime reports no image filesystem');
      if (old.failures > 0) throw new GcRemovalError('image GC', old.failures);
      return;
    }
    const fs = await this.fsStats(imageFs.mountpoint);
    const left = images.filter((i) => !old.removed.has(i.id));
    const plan = planImageGc({ images: left, fs, policy: this.policy.image, nowMs: this.options.clock.now(), sandboxImage: this.options.sandboxImage });
    const figures = { mountpoint: imageFs.mountpoint, usagePercent: plan.usagePercent, runtimeImageBytes: Number(imageFs.usedBytes), ...this.policy.image };
    let failures = old.failures;
    if (plan.bytesToFree === 0) {
      this.options.logger.debug(figures, 'image GC: image filesystem below the high threshold');
    } else {
      this.options.logger.info({ ...figures, bytesToFree: plan.bytesToFree, images: plan.remove.length }, 'image GC: image filesystem at or above the high threshold');
      for (const image of plan.remove) failures += await this.removeImage(image, 'space', 'image GC: removed unused image');
      if (plan.bytesFreed < plan.bytesToFree) this.options.logger.warn({ ...figures, bytesToFree: plan.bytesToFree, bytesFreed: plan.bytesFreed }, 'image GC: not enough unused images to reach the low threshold');
    }
    if (failures > 0) throw new GcRemovalError('image GC', failures);
  }

  /** Removes the images unused for longer than the maximum age; the IDs removed and the failures. */
  private async removeOldImages(images: readonly GcImage[]): Promise<{ removed: ReadonlySet<string>; failures: number }> {
    const { maxAgeMs } = this.policy.image;
    const old = planOldImages({ images, maxAgeMs, nowMs: this.options.clock.now(), startedMs: this.startedMs, sandboxImage: this.options.sandboxImage });
    const removed = new Set<string>();
    let failures = 0;
    for (const image of old) {
      const lastUsed = image.record.lastUsedMs === undefined ? 'never' : new Date(image.record.lastUsedMs).toISOString();
      const failed = await this.removeImage(image, 'age', 'image GC: removed image unused for longer than the maximum age', { lastUsed, maxAgeSeconds: maxAgeMs / 1000 });
      failures += failed;
      if (failed === 0) removed.add(image.id);
    }
    return { removed, failures };
  }

  /** Removes one image, logged with `message` and counted under `reason`; 1 when it failed. */
  private removeImage(image: GcImage, reason: ImageGcReason, message: string, extra: Record<string, unknown> = {}): Promise<number> {
    const fields = { imageId: image.id, names: image.names, sizeBytes: image.sizeBytes, reason, ...extra };
    return this.attempt(fields, 'removing unused image', async () => {
      await this.options.images.removeImage({ image: image.id });
      this.options.metrics?.imageRemoved(reason);
      this.options.logger.info(fields, message);
    });
  }
}
