/**
 * The volume manager: prepares every volume of a pod in the kubelet's on-disk layout and removes
 * them with the pod. See `types.ts` for the contract.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { V1CSIVolumeSource, V1Pod, V1Volume } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { writeAtomically } from './atomic-writer.js';
import { configMapPayload } from './configmap.js';
import { downwardApiPayload } from './downward-api.js';
import type { NodeAllocatable } from '../model/resource-field.js';
import os from 'node:os';
import { memoryVolumeBytes, prepareEmptyDir } from './empty-dir.js';
import { unmountAllUnder } from './mounts-table.js';
import { describeCause, failedMount, isVolumeError, VolumeError } from './errors.js';
import { ensureDir } from './fs-util.js';
import { prepareHostPath } from './host-path.js';
import { boundVolume, ephemeralClaimName, hostClaimedVolume, type ClaimRequest } from './persistent-volume.js';
import { CsiVolumePlugin } from './csi/csi-plugin.js';
import { inlineCsiSpec, persistentCsiSpec } from './csi/spec.js';
import { pluginDir, POD_DIR_MODE, podDir, volumeDir, type VolumePluginDir } from './layout.js';
import { applyFsGroup, fsGroupOf, fsUserOf } from './ownership.js';
import { DEFAULT_FILE_MODE, fileMode, type Payload } from './payload.js';
import { projectedPayload } from './projected.js';
import { secretPayload } from './secret.js';
import { createServiceAccountTokens, type ServiceAccountTokens } from './service-account-token.js';
import type { PreparedVolumes, VolumeManager, VolumeManagerOptions } from './types.js';
import { FOLLOWING_SOURCE_KINDS, classifyVolume, type ClassifiedVolume } from './volume-kind.js';

/**
 * Root of an atomic-writer volume: 0777 like the kubelet's (it wraps an emptyDir). Containers mount
 * these volumes read-only, so the mode only matters to host users, and the pod directory above is 0750.
 */
const ATOMIC_VOLUME_ROOT_MODE = 0o777;

interface ManagerContext {
  readonly rootDir: string;
  readonly options: VolumeManagerOptions;
  readonly clock: () => Date;
  readonly tokens: ServiceAccountTokens;
  readonly logger: Logger;
  /** The CSI volume plugin; absent: csi volumes are refused as unsupported. */
  readonly csi: CsiVolumePlugin | undefined;
}

interface PodContext extends ManagerContext {
  readonly signal: AbortSignal | undefined;
  readonly pod: V1Pod;
  readonly uid: string;
  readonly namespace: string;
  readonly fsGroup: number | undefined;
}

interface PreparedVolume {
  readonly hostPath: string;
  /** Containers must mount it read-only (atomic-writer volumes). */
  readonly readOnly: boolean;
}

/** Creates a volume manager rooted at `options.rootDir`. */
export function createVolumeManager(options: VolumeManagerOptions): VolumeManager {
  const clock = options.clock ?? ((): Date => new Date());
  const logger = options.logger.child({ component: 'volumes' });
  const csi = options.csi === undefined ? undefined : new CsiVolumePlugin({ ...options.csi, rootDir: options.rootDir, readSecret: (namespace, name) => options.api.readSecret(namespace, name), logger: logger.child({ plugin: 'kubernetes.io/csi' }) });
  const context: ManagerContext = {
    rootDir: options.rootDir,
    options,
    clock,
    tokens: createServiceAccountTokens({ api: options.api, clock }),
    logger,
    csi,
  };
  return {
    prepare: (pod, signal) => preparePod(context, pod, { kinds: ALL_KINDS, signal }),
    async refresh(pod): Promise<void> {
      await preparePod(context, pod, { kinds: FOLLOWING_SOURCE_KINDS, signal: undefined });
    },
    async teardown(podUid: string, signal?: AbortSignal): Promise<void> {
      // As the kubelet: the driver unpublishes (and unstages) its volumes before anything is removed.
      await csi?.tearDownPod(podUid, signal);
      await removeMounted(path.join(podDir(context.rootDir, podUid), 'volumes'));
      context.logger.debug({ podUID: podUid }, 'terminated pod\'s volumes torn down');
    },
    async cleanup(podUid: string, signal?: AbortSignal): Promise<void> {
      await csi?.tearDownPod(podUid, signal);
      await removeMounted(podDir(context.rootDir, podUid));
      context.logger.debug({ podUID: podUid }, 'pod volumes removed');
    },
    volumesInUse: () => csi?.volumesInUse() ?? [],
    podForgotten(key): void {
      context.tokens.forgetPod(key.uid);
    },
  };
}

/** Removes a directory tree that may hold mounts: memory-backed emptyDirs are tmpfs mounts, unmounted first (removing a mount point fails). */
async function removeMounted(dir: string): Promise<void> {
  await unmountAllUnder(dir);
  await fs.rm(dir, { recursive: true, force: true });
}

type VolumeKind = ClassifiedVolume['kind'];

const ALL_KINDS: ReadonlySet<VolumeKind> = new Set(['emptyDir', 'hostPath', 'persistentVolumeClaim', 'ephemeral', 'csi', 'configMap', 'secret', 'projected', 'downwardAPI', 'unsupported']);

/** Prepares the pod's volumes of the given kinds (the others are left as they are). */
async function preparePod(context: ManagerContext, pod: V1Pod, which: { readonly kinds: ReadonlySet<VolumeKind>; readonly signal: AbortSignal | undefined }): Promise<PreparedVolumes> {
  const { kinds, signal } = which;
  const uid = pod.metadata?.uid ?? '';
  if (uid === '') throw new VolumeError({ reason: 'FailedMount', message: 'pod has no metadata.uid' });
  const podContext: PodContext = {
    ...context,
    logger: context.logger.child({ podUID: uid }),
    signal,
    pod,
    uid,
    namespace: pod.metadata?.namespace ?? '',
    fsGroup: fsGroupOf(pod),
  };
  try {
    await ensurePodDirs(context.rootDir, uid);
  } catch (error) {
    throw new VolumeError({ reason: 'FailedMount', message: `pod directory: ${describeCause(error)}`, cause: error });
  }

  const hostPaths = new Map<string, string>();
  const readOnlyVolumes = new Set<string>();
  const failures: VolumeError[] = [];
  const devices = rawBlockVolumes(pod);
  for (const volume of pod.spec?.volumes ?? []) {
    const classified = hostVolumeOf(volume, kinds);
    if (classified === undefined) continue;
    if (devices.has(volume.name)) {
      failures.push(failedMount(volume.name, 'it is used in volumeDevices: raw block volumes are not supported by nodelet'));
      continue;
    }
    try {
      const prepared = await prepareVolume(podContext, volume, classified);
      hostPaths.set(volume.name, prepared.hostPath);
      if (prepared.readOnly) readOnlyVolumes.add(volume.name);
    } catch (error) {
      failures.push(isVolumeError(error) ? error : failedMount(volume.name, describeCause(error), error));
    }
  }
  throwFailures(failures);
  return { hostPaths, readOnlyVolumes };
}

/** Volumes some container uses as a raw block device (`volumeDevices`): nodelet maps no block devices. */
function rawBlockVolumes(pod: V1Pod): ReadonlySet<string> {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return new Set(containers.flatMap((c) => (c.volumeDevices ?? []).map((d) => d.name)));
}

function throwFailures(failures: readonly VolumeError[]): void {
  const [first] = failures;
  if (first === undefined) return;
  if (failures.length === 1) throw first;
  throw new VolumeError({
    reason: 'FailedMount',
    ...(first.volumeName === undefined ? {} : { volumeName: first.volumeName }),
    message: failures.map((failure) => failure.message).join('; '),
    failures,
    cause: first,
  });
}

async function ensurePodDirs(rootDir: string, uid: string): Promise<void> {
  const dir = podDir(rootDir, uid);
  await fs.mkdir(path.dirname(dir), { recursive: true, mode: POD_DIR_MODE });
  await ensureDir(dir, POD_DIR_MODE);
  await ensureDir(path.join(dir, 'volumes'), POD_DIR_MODE);
}

/** The node's allocatable CPU and memory as the options give them (default: the host's). */
function allocatableOf(context: PodContext): NodeAllocatable {
  const { nodeAllocatableMilliCpu, nodeAllocatableMemoryBytes } = context.options;
  return { milliCpu: nodeAllocatableMilliCpu ?? os.availableParallelism() * 1000, memoryBytes: nodeAllocatableMemoryBytes ?? os.totalmem() };
}

/** The volumes prepared on the host: every kind but `image`. */
type HostVolume = Exclude<ClassifiedVolume, { readonly kind: 'image' }>;

/**
 * The volume classified, when it is of one of `kinds` and prepared on the host. An image volume
 * never is: the runtime mounts it when it creates a container.
 */
function hostVolumeOf(volume: V1Volume, kinds: ReadonlySet<VolumeKind>): HostVolume | undefined {
  const classified = classifyVolume(volume);
  return kinds.has(classified.kind) && classified.kind !== 'image' ? classified : undefined;
}

async function prepareVolume(context: PodContext, volume: V1Volume, classified: HostVolume): Promise<PreparedVolume> {
  const { api } = context.options;
  const { namespace } = context;
  switch (classified.kind) {
    case 'emptyDir': {
      const dir = await volumeDirFor(context, 'empty-dir', volume.name);
      const memoryBytes = memoryVolumeBytes(context.pod, classified.source, context.options.nodeAllocatableMemoryBytes ?? os.totalmem());
      await prepareEmptyDir({ dir, source: classified.source, memoryBytes, ...(context.fsGroup === undefined ? {} : { fsGroup: context.fsGroup }) });
      return { hostPath: dir, readOnly: false };
    }
    case 'hostPath':
      return { hostPath: await prepareHostPath(classified.source), readOnly: false };
    case 'persistentVolumeClaim':
      return prepareClaim(context, { api, namespace, volumeName: volume.name, source: classified.source });
    case 'ephemeral':
      return prepareEphemeralClaim(context, volume.name);
    case 'configMap': {
      const { source } = classified;
      const payload = await configMapPayload({ api, namespace, source, defaultMode: fileMode(source.defaultMode, DEFAULT_FILE_MODE) });
      return writeVolume(context, { plugin: 'configmap', volumeName: volume.name, payload });
    }
    case 'secret': {
      const { secretName, items, optional, defaultMode } = classified.source;
      const source = { name: secretName ?? '', items, optional };
      const payload = await secretPayload({ api, namespace, source, defaultMode: fileMode(defaultMode, DEFAULT_FILE_MODE) });
      return writeVolume(context, { plugin: 'secret', volumeName: volume.name, payload });
    }
    case 'projected': {
      const payload = await projectedPayload({
        api,
        tokens: context.tokens,
        pod: context.pod,
        volumeName: volume.name,
        source: classified.source,
        allocatable: allocatableOf(context),
        ...optionalIds(fsUserOf(context.pod), context.fsGroup),
      });
      return writeVolume(context, { plugin: 'projected', volumeName: volume.name, payload });
    }
    case 'downwardAPI': {
      const { items, defaultMode } = classified.source;
      const payload = downwardApiPayload({ items, pod: context.pod, defaultMode: fileMode(defaultMode, DEFAULT_FILE_MODE), allocatable: allocatableOf(context) });
      return writeVolume(context, { plugin: 'downward-api', volumeName: volume.name, payload });
    }
    case 'csi':
      return prepareInlineCsi(context, volume.name, classified.source);
    case 'unsupported':
      throw failedMount(volume.name, `${classified.type} volumes are not supported by nodelet`);
  }
}

/** A generic ephemeral volume: the claim the ephemeral volume controller made for this pod. */
async function prepareEphemeralClaim(context: PodContext, volumeName: string): Promise<PreparedVolume> {
  const podName = context.pod.metadata?.name ?? '';
  const source = { claimName: ephemeralClaimName(podName, volumeName) };
  return prepareClaim(context, { api: context.options.api, namespace: context.namespace, volumeName, source, ephemeralFor: { name: podName, uid: context.uid } });
}

/** An inline CSI ephemeral volume, published by its driver. */
async function prepareInlineCsi(context: PodContext, volumeName: string, source: V1CSIVolumeSource): Promise<PreparedVolume> {
  if (context.csi === undefined) throw failedMount(volumeName, 'csi volumes are not supported by nodelet');
  const spec = inlineCsiSpec(context.pod, volumeName, source);
  return { hostPath: await context.csi.setUp({ pod: context.pod, spec, fsGroup: context.fsGroup, signal: context.signal }), readOnly: false };
}

async function prepareClaim(context: PodContext, request: ClaimRequest): Promise<PreparedVolume> {
  const pv = await boundVolume(request);
  const csiSpec = context.csi === undefined ? undefined : persistentCsiSpec(pv, request.source.readOnly === true);
  if (context.csi !== undefined && csiSpec !== undefined) {
    if (pv.spec?.volumeMode === 'Block') throw failedMount(request.volumeName, `PV "${csiSpec.specName}" has volumeMode Block: block volumes are not supported by nodelet`);
    return { hostPath: await context.csi.setUp({ pod: context.pod, spec: csiSpec, fsGroup: context.fsGroup, signal: context.signal }), readOnly: csiSpec.readOnly };
  }
  const claimed = await hostClaimedVolume(request, pv);
  if (claimed.ownershipManaged && context.fsGroup !== undefined) await applyFsGroup(claimed.hostPath, { gid: context.fsGroup, readOnly: claimed.readOnly });
  return { hostPath: claimed.hostPath, readOnly: claimed.readOnly };
}

function optionalIds(fsUser: number | undefined, fsGroup: number | undefined): { fsUser?: number; fsGroup?: number } {
  return { ...(fsUser === undefined ? {} : { fsUser }), ...(fsGroup === undefined ? {} : { fsGroup }) };
}

async function volumeDirFor(context: PodContext, plugin: VolumePluginDir, volumeName: string): Promise<string> {
  await ensureDir(pluginDir(context.rootDir, context.uid, plugin), POD_DIR_MODE);
  return volumeDir(context.rootDir, context.uid, plugin, volumeName);
}

interface VolumeWrite {
  readonly plugin: VolumePluginDir;
  readonly volumeName: string;
  readonly payload: Payload;
}

/** Creates the volume root if needed and projects the payload into it atomically. */
async function writeVolume(context: PodContext, write: VolumeWrite): Promise<PreparedVolume> {
  const dir = await volumeDirFor(context, write.plugin, write.volumeName);
  const { fsGroup } = context;
  const created = await ensureDir(dir, ATOMIC_VOLUME_ROOT_MODE);
  if (created && fsGroup !== undefined) await applyFsGroup(dir, { gid: fsGroup, readOnly: true });
  const written = await writeAtomically({
    targetDir: dir,
    payload: write.payload,
    now: context.clock(),
    ...(fsGroup === undefined ? {} : { setPerms: (versionDir: string) => applyFsGroup(versionDir, { gid: fsGroup, readOnly: true }) }),
  });
  if (written) context.logger.debug({ volume: write.volumeName, files: write.payload.size }, 'volume contents written');
  return { hostPath: dir, readOnly: true };
}
