/**
 * The CSI volume plugin, as the kubelet's `pkg/volume/csi` and its operation executor run it for
 * one pod volume:
 *
 * 1. the driver must be registered (`plugins_registry/`) and serve the volume's lifecycle mode;
 * 2. a persistent volume whose CSIDriver says `attachRequired` (the default) waits for the
 *    attach-detach controller: reported in the Node's `volumesInUse`, listed in its
 *    `volumesAttached`, its `VolumeAttachment` attached (whose metadata is the publish context);
 * 3. a persistent volume is staged once per node at the global path (`NodeStageVolume`, when the
 *    driver has STAGE_UNSTAGE_VOLUME);
 * 4. published to the pod's target path (`NodePublishVolume`), with the pod's fsGroup applied by
 *    the kubelet or delegated to the driver as the CSIDriver's `fsGroupPolicy` says.
 *
 * Teardown reverses it (`NodeUnpublishVolume`, then `NodeUnstageVolume` once no pod's volume
 * refers to the staged one), from the `vol_data.json` records alone, so it works after an agent
 * kill at any step. Failures are `VolumeError`s whose operation and text are the kubelet's.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { V1CSIDriver, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeCause, failedMount, type MountOperation } from '../errors.js';
import { mountAt } from '../mounts-table.js';
import { applyFsGroup } from '../ownership.js';
import { attachmentVerdict, attachRequired, csiAccessMode, delegatedFsGroup, fsGroupPolicyOf, kubeletAppliesFsGroup, lifecycleModeRefusal, podInfoOnMount, publishVolumeContext, type FsGroupPolicy } from './decisions.js';
import { attachmentName, csiPodPluginDir, csiStagingPath, csiTargetPath, uniqueVolumeName, VOL_DATA_FILE } from './paths.js';
import type { CsiVolumeSpec, SecretRef } from './spec.js';
import type { CsiMountCapability, CsiNodeClient, CsiPluginOptions } from './types.js';
import { loadVolData, podVolDataOnDisk, saveVolData, type VolData } from './vol-data.js';

/** Reads a secret's data (base64 values, as the API serves them); undefined when it does not exist. */
export type SecretReader = (namespace: string, name: string) => Promise<{ data?: Record<string, string> } | undefined>;

/** One pod volume to set up. */
export interface CsiSetUpRequest {
  readonly pod: V1Pod;
  readonly spec: CsiVolumeSpec;
  readonly fsGroup: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

const log = (message: string): string => `kubernetes.io/csi: ${message}`;
const notRegistered = (driver: string): string => `driver name ${driver} not found in the list of registered CSI drivers`;

/** A mount failure of `spec`'s volume, named as the kubelet names it (the PV's name for a claim). */
function fail(spec: CsiVolumeSpec, operation: MountOperation, cause: string, original?: unknown): Error {
  return failedMount(spec.specName, cause, original, operation);
}

export class CsiVolumePlugin {
  /** Target paths published by this process (the kubelet's actual state of the world; empty after a restart, then NodePublish is called again, which is idempotent). */
  private readonly published = new Set<string>();
  /** Volumes being set up now, by pod UID: in use before their records are on disk, and never unstaged under them. */
  private readonly settingUp = new Map<string, Set<string>>();

  constructor(
    private readonly options: CsiPluginOptions & { readonly rootDir: string; readonly readSecret: SecretReader; readonly logger: Logger },
  ) {}

  /** Sets the volume up for the pod. @returns its target path (what containers mount). @throws VolumeError */
  async setUp(request: CsiSetUpRequest): Promise<string> {
    const { pod, spec } = request;
    const uid = pod.metadata?.uid ?? '';
    const target = csiTargetPath(this.options.rootDir, uid, spec.specName);
    if (this.published.has(target)) return target;
    this.markSettingUp(uid, spec, true);
    try {
      const client = this.options.drivers.client(spec.driverName);
      if (client === undefined) throw fail(spec, spec.mode === 'Persistent' ? 'MountVolume.MountDevice' : 'MountVolume.SetUp', log(`mounter.SetUpAt failed to get CSI client: ${notRegistered(spec.driverName)}`));
      const driver = await this.readDriver(spec, request.signal);
      const refusal = lifecycleModeRefusal(spec.driverName, driver, spec.mode);
      if (refusal !== undefined) throw fail(spec, 'MountVolume.SetUp', log(`mounter.SetupAt failed to check volume lifecycle mode: ${refusal}`));
      // Service account tokens for the driver are not done: refused visibly, never a publish without them.
      if ((driver?.spec.tokenRequests ?? []).length > 0) throw fail(spec, 'MountVolume.SetUp', log('mounter.SetUpAt failed to get service accoount token attributes: CSIDriver tokenRequests are not supported by nodelet'));
      const policy = fsGroupPolicyOf(driver);
      if ('error' in policy) throw fail(spec, 'MountVolume.SetUp', log(`mounter.SetupAt failed to check fsGroup policy: ${policy.error}`));
      const publishContext = spec.mode === 'Persistent' && attachRequired(driver) ? await this.waitForAttach(spec, request.signal) : {};
      const capabilities = await this.capabilities(client, spec, request.signal);
      const staging = spec.mode === 'Persistent' ? await this.mountDevice({ client, spec, capabilities, publishContext, fsGroup: request.fsGroup, signal: request.signal }) : '';
      await this.publish({ client, request, target, staging, publishContext, capabilities, driver });
      await this.applyOwnership({ spec, target, fsGroup: request.fsGroup, policy: policy.policy, capabilities });
      this.published.add(target);
      return target;
    } finally {
      this.markSettingUp(uid, spec, false);
    }
  }

  /**
   * Unpublishes every CSI volume of the pod, then unstages the staged volumes no pod refers to any
   * more. Idempotent; a volume whose driver is not registered now fails the teardown (retried).
   */
  async tearDownPod(podUid: string, signal?: AbortSignal): Promise<void> {
    const pluginDir = csiPodPluginDir(this.options.rootDir, podUid);
    const names = await fs.readdir(pluginDir).catch(() => []);
    const mine = new Set<string>();
    for (const name of names) {
      const data = await this.tearDownVolume(path.join(pluginDir, name), signal);
      if (data !== undefined) mine.add(uniqueVolumeName(data.driverName, data.volumeHandle));
    }
    await this.unstageUnused(mine, signal);
  }

  /** The Node's `volumesInUse`: every persistent CSI volume a pod has on disk or is setting up, sorted. */
  volumesInUse(): string[] {
    const names = new Set<string>();
    for (const { data } of podVolDataOnDisk(this.options.rootDir)) {
      if (data.volumeLifecycleMode !== 'Ephemeral') names.add(uniqueVolumeName(data.driverName, data.volumeHandle));
    }
    for (const volumes of this.settingUp.values()) for (const name of volumes) names.add(name);
    return [...names].sort();
  }

  private markSettingUp(uid: string, spec: CsiVolumeSpec, on: boolean): void {
    if (spec.mode !== 'Persistent') return;
    const name = uniqueVolumeName(spec.driverName, spec.volumeHandle);
    const volumes = this.settingUp.get(uid) ?? new Set<string>();
    const had = volumes.has(name);
    if (on) volumes.add(name);
    else volumes.delete(name);
    if (volumes.size === 0) this.settingUp.delete(uid);
    else this.settingUp.set(uid, volumes);
    if (on && !had) this.options.onVolumesInUseChanged?.();
  }

  private async readDriver(spec: CsiVolumeSpec, signal: AbortSignal | undefined): Promise<V1CSIDriver | undefined> {
    signal?.throwIfAborted();
    try {
      return await this.options.api.readCSIDriver(spec.driverName);
    } catch (error) {
      throw fail(spec, 'MountVolume.SetUp', log(`mounter.SetupAt failed to check volume lifecycle mode: ${describeCause(error)}`), error);
    }
  }

  private async capabilities(client: CsiNodeClient, spec: CsiVolumeSpec, signal: AbortSignal | undefined): Promise<ReadonlySet<string>> {
    try {
      return await client.nodeGetCapabilities(signal);
    } catch (error) {
      throw fail(spec, spec.mode === 'Persistent' ? 'MountVolume.MountDevice' : 'MountVolume.SetUp', log(`mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: ${describeCause(error)}`), error);
    }
  }

  /** VerifyControllerAttachedVolume then WaitForAttach: the Node lists the volume attached and its VolumeAttachment says so. @returns the publish context */
  private async waitForAttach(spec: CsiVolumeSpec, signal: AbortSignal | undefined): Promise<Readonly<Record<string, string>>> {
    const { api, nodeName } = this.options;
    const unique = uniqueVolumeName(spec.driverName, spec.volumeHandle);
    signal?.throwIfAborted();
    const node = await api.readNode(nodeName).catch((error: unknown) => {
      throw fail(spec, 'VerifyControllerAttachedVolume', `VerifyControllerAttachedVolume failed fetching node from API server: ${describeCause(error)}`, error);
    });
    if (!(node?.status?.volumesInUse ?? []).includes(unique)) throw fail(spec, 'VerifyControllerAttachedVolume', "Volume has not been added to the list of VolumesInUse in the node's volume status");
    if (!(node?.status?.volumesAttached ?? []).some((v) => v.name === unique)) throw fail(spec, 'VerifyControllerAttachedVolume', 'Volume not attached according to node status');
    const attachId = attachmentName(spec.volumeHandle, spec.driverName, nodeName);
    const attachment = await api.readVolumeAttachment(attachId).catch((error: unknown) => {
      throw fail(spec, 'MountVolume.WaitForAttach', `volume ${spec.volumeHandle} has GET error for volume attachment ${attachId}: ${describeCause(error)}`, error);
    });
    if (attachment === undefined) throw fail(spec, 'MountVolume.WaitForAttach', `volume ${spec.volumeHandle} has GET error for volume attachment ${attachId}: volumeattachments.storage.k8s.io "${attachId}" not found`);
    const verdict = attachmentVerdict(attachment);
    if (verdict.state === 'failed') throw fail(spec, 'MountVolume.WaitForAttach', verdict.message);
    if (verdict.state === 'pending') throw fail(spec, 'MountVolume.WaitForAttach', `volume ${spec.volumeHandle} is not attached for volume attachment ${attachId}`);
    return verdict.publishContext;
  }

  /** The driver's secrets of a reference, decoded. */
  private async secrets(spec: CsiVolumeSpec, ref: SecretRef | undefined, what: string): Promise<Record<string, string>> {
    if (ref === undefined) return {};
    let secret;
    try {
      secret = await this.options.readSecret(ref.namespace, ref.name);
    } catch (error) {
      throw fail(spec, 'MountVolume.SetUp', `fetching ${what} ${ref.namespace}/${ref.name} failed: ${describeCause(error)}`, error);
    }
    if (secret === undefined) throw fail(spec, 'MountVolume.SetUp', `fetching ${what} ${ref.namespace}/${ref.name} failed: secrets "${ref.name}" not found`);
    return Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
  }

  private capability(spec: CsiVolumeSpec, capabilities: ReadonlySet<string>, fsGroup: number | undefined): CsiMountCapability {
    const group = delegatedFsGroup(fsGroup, capabilities.has('VOLUME_MOUNT_GROUP'));
    return {
      accessMode: csiAccessMode(spec.accessModes?.[0], capabilities.has('SINGLE_NODE_MULTI_WRITER')),
      fsType: spec.fsType,
      mountFlags: spec.mountOptions,
      ...(group === undefined ? {} : { volumeMountGroup: group }),
    };
  }

  /** MountDevice: the staging directory and its record always (unstaging needs them), NodeStageVolume when the driver stages. @returns the staging path, or '' */
  private async mountDevice(step: { client: CsiNodeClient; spec: CsiVolumeSpec; capabilities: ReadonlySet<string>; publishContext: Readonly<Record<string, string>>; fsGroup: number | undefined; signal: AbortSignal | undefined }): Promise<string> {
    const { client, spec, capabilities } = step;
    const staging = csiStagingPath(this.options.rootDir, spec.driverName, spec.volumeHandle);
    const stages = capabilities.has('STAGE_UNSTAGE_VOLUME');
    const secrets = stages ? await this.secrets(spec, spec.stageSecretRef, 'NodeStageSecretRef') : {};
    try {
      await fs.mkdir(staging, { recursive: true, mode: 0o750 });
      await saveVolData(path.dirname(staging), { driverName: spec.driverName, volumeHandle: spec.volumeHandle });
    } catch (error) {
      throw fail(spec, 'MountVolume.MountDevice', log(`attacher.MountDevice failed to create dir ${JSON.stringify(staging)}: ${describeCause(error)}`), error);
    }
    if (!stages) return '';
    const request = { volumeId: spec.volumeHandle, publishContext: step.publishContext, stagingTargetPath: staging, capability: this.capability(spec, capabilities, step.fsGroup), secrets, volumeContext: spec.attributes };
    try {
      await client.nodeStageVolume(request, step.signal);
    } catch (error) {
      throw fail(spec, 'MountVolume.MountDevice', describeCause(error), error);
    }
    return staging;
  }

  /** SetUp: the target's parent and record, then NodePublishVolume; a failed call leaves no empty target behind. */
  private async publish(step: { client: CsiNodeClient; request: CsiSetUpRequest; target: string; staging: string; publishContext: Readonly<Record<string, string>>; capabilities: ReadonlySet<string>; driver: V1CSIDriver | undefined }): Promise<void> {
    const { spec, pod } = step.request;
    const { nodeName } = this.options;
    const secrets = await this.secrets(spec, spec.publishSecretRef, 'NodePublishSecretRef');
    await saveVolData(path.dirname(step.target), {
      specVolID: spec.specName,
      volumeHandle: spec.volumeHandle,
      driverName: spec.driverName,
      nodeName,
      volumeLifecycleMode: spec.mode,
      attachmentID: attachmentName(spec.volumeHandle, spec.driverName, nodeName),
    }).catch((error: unknown) => {
      throw fail(spec, 'MountVolume.SetUp', log(`mounter.SetUpAt failed to save volume info data: ${describeCause(error)}`), error);
    });
    const volumeContext = publishVolumeContext(spec.attributes, pod, { podInfo: podInfoOnMount(step.driver), mode: spec.mode });
    try {
      await step.client.nodePublishVolume({
        volumeId: spec.volumeHandle,
        publishContext: step.publishContext,
        stagingTargetPath: step.staging,
        targetPath: step.target,
        capability: this.capability(spec, step.capabilities, step.request.fsGroup),
        readonly: spec.readOnly,
        secrets,
        volumeContext,
      }, step.request.signal);
    } catch (error) {
      await removeMountDir(step.target).catch(() => undefined);
      throw fail(spec, 'MountVolume.SetUp', describeCause(error), error);
    }
  }

  private async applyOwnership(step: { spec: CsiVolumeSpec; target: string; fsGroup: number | undefined; policy: FsGroupPolicy; capabilities: ReadonlySet<string> }): Promise<void> {
    const { spec, fsGroup } = step;
    const applies = kubeletAppliesFsGroup({ fsGroup, policy: step.policy, readOnly: spec.readOnly, fsType: spec.fsType, accessModes: spec.accessModes, driverAppliesGroup: step.capabilities.has('VOLUME_MOUNT_GROUP') });
    if (!applies || fsGroup === undefined) return;
    try {
      await applyFsGroup(step.target, { gid: fsGroup, readOnly: false });
    } catch (error) {
      throw fail(spec, 'MountVolume.SetUp', `applyFSGroup failed for vol ${spec.volumeHandle}: ${describeCause(error)}`, error);
    }
  }

  /** TearDownAt: NodeUnpublishVolume on the record's target, then the directory and record go. */
  private async tearDownVolume(volumeDir: string, signal: AbortSignal | undefined): Promise<VolData | undefined> {
    const target = path.join(volumeDir, 'mount');
    const data = await loadVolData(volumeDir);
    if (data === undefined) {
      await removeMountDir(target);
      return undefined;
    }
    const client = this.options.drivers.client(data.driverName);
    if (client === undefined) throw new Error(log(`Unmounter.TearDownAt failed to get CSI client: ${notRegistered(data.driverName)}`));
    try {
      await client.nodeUnpublishVolume(data.volumeHandle, target, signal);
    } catch (error) {
      throw new Error(log(`Unmounter.TearDownAt failed: ${describeCause(error)}`), { cause: error });
    }
    await removeMountDir(target);
    this.published.delete(target);
    this.options.logger.debug({ volume: data.specVolID, driver: data.driverName }, 'CSI volume unpublished');
    return data;
  }

  /**
   * UnmountDevice for every staged volume no pod refers to and none is being set up with. A failure
   * fails the teardown only for a volume this pod used (`mine`); another one left over (an agent
   * killed mid-stage) is logged and tried again at the next teardown, never holding this pod.
   */
  private async unstageUnused(mine: ReadonlySet<string>, signal: AbortSignal | undefined): Promise<void> {
    const inUse = new Set(this.volumesInUse());
    const csiRoot = path.join(this.options.rootDir, 'plugins', 'kubernetes.io', 'csi');
    for (const driverName of await fs.readdir(csiRoot).catch(() => [])) {
      for (const hash of await fs.readdir(path.join(csiRoot, driverName)).catch(() => [])) {
        const dataDir = path.join(csiRoot, driverName, hash);
        const data = await loadVolData(dataDir).catch(() => undefined);
        const unique = data === undefined ? '' : uniqueVolumeName(data.driverName, data.volumeHandle);
        if (data === undefined || inUse.has(unique)) continue;
        try {
          await this.unmountDevice(path.join(dataDir, 'globalmount'), data, signal);
        } catch (error) {
          if (mine.has(unique)) throw error;
          this.options.logger.warn({ err: error, driver: data.driverName, volumeHandle: data.volumeHandle }, 'could not unstage a CSI volume no pod uses; tried again at the next teardown');
        }
      }
    }
  }

  private async unmountDevice(staging: string, data: { driverName: string; volumeHandle: string }, signal: AbortSignal | undefined): Promise<void> {
    const client = this.options.drivers.client(data.driverName);
    if (client === undefined) throw new Error(log(`attacher.UnmountDevice failed to create newCsiDriverClient: ${notRegistered(data.driverName)}`));
    const capabilities = await client.nodeGetCapabilities(signal);
    if (capabilities.has('STAGE_UNSTAGE_VOLUME')) {
      try {
        await client.nodeUnstageVolume(data.volumeHandle, staging, signal);
      } catch (error) {
        throw new Error(log(`attacher.UnmountDevice failed: ${describeCause(error)}`), { cause: error });
      }
    }
    await removeMountDir(staging);
    this.options.logger.debug({ driver: data.driverName, volumeHandle: data.volumeHandle }, 'CSI volume unstaged');
  }
}

/**
 * `removeMountDir`: when `dir` is no mount point any more, it goes with the record beside it and
 * their parent. A driver that left it mounted fails the teardown (retried), never a forced unmount.
 */
export async function removeMountDir(dir: string): Promise<void> {
  if ((await mountAt(dir)) !== undefined) throw new Error(log(`failed to clean up mount dir ${dir}: still mounted`));
  await fs.rmdir(dir).catch(ignoreCodes('ENOENT'));
  const parent = path.dirname(dir);
  await fs.rm(path.join(parent, VOL_DATA_FILE), { force: true });
  await fs.rmdir(parent).catch(ignoreCodes('ENOENT', 'ENOTEMPTY'));
}

function ignoreCodes(...codes: string[]): (error: unknown) => void {
  return (error) => {
    if (!(error instanceof Error && 'code' in error && typeof error.code === 'string' && codes.includes(error.code))) throw error;
  };
}
