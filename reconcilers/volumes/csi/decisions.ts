/**
 * The CSI plugin's decisions, pure, each as the kubelet's `pkg/volume/csi` makes it: the CSIDriver
 * object's defaults (attachRequired, podInfoOnMount, fsGroupPolicy, lifecycle modes), who applies
 * the pod's fsGroup, the access mode sent to the driver, the volume context, and what a
 * VolumeAttachment says.
 */
import type { V1CSIDriver, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import type { CsiAccessMode } from './types.js';

export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';
export type FsGroupPolicy = 'File' | 'ReadWriteOnceWithFSType' | 'None';

/** Without a CSIDriver object the driver needs attaching (the kubelet's `skipAttach` is false). */
export function attachRequired(driver: V1CSIDriver | undefined): boolean {
  return driver?.spec.attachRequired ?? true;
}

export function podInfoOnMount(driver: V1CSIDriver | undefined): boolean {
  return driver?.spec.podInfoOnMount === true;
}

/**
 * The driver's fsGroupPolicy (`getFSGroupPolicy`): `ReadWriteOnceWithFSType` without a CSIDriver
 * object; an error text when the object has none (the API server defaults it, so only a broken
 * object lacks it).
 */
export function fsGroupPolicyOf(driver: V1CSIDriver | undefined): { policy: FsGroupPolicy } | { error: string } {
  if (driver === undefined) return { policy: 'ReadWriteOnceWithFSType' };
  const policy = driver.spec.fsGroupPolicy;
  if (policy === 'File' || policy === 'ReadWriteOnceWithFSType' || policy === 'None') return { policy };
  if (policy === undefined || policy === '') return { error: 'kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string' };
  return { error: `kubernetes.io/csi: unknown fsGroupPolicy "${policy}"` };
}

/** Why the driver cannot serve a volume of this lifecycle mode (`supportsVolumeLifecycleMode`); undefined when it can. */
export function lifecycleModeRefusal(driverName: string, driver: V1CSIDriver | undefined, mode: VolumeLifecycleMode): string | undefined {
  if (driver === undefined) return mode === 'Persistent' ? undefined : `volume mode "${mode}" not supported by driver ${driverName} (no CSIDriver object)`;
  const modes = driver.spec.volumeLifecycleModes ?? ['Persistent'];
  if (modes.includes(mode)) return undefined;
  return `volume mode "${mode}" not supported by driver ${driverName} (only supports ${JSON.stringify(modes)})`;
}

/** What {@link kubeletAppliesFsGroup} weighs. */
export interface FsGroupCase {
  readonly fsGroup: number | undefined;
  readonly policy: FsGroupPolicy;
  readonly readOnly: boolean;
  readonly fsType: string;
  /** The PV's access modes; undefined for an inline volume (always mounted ReadWriteOnce). */
  readonly accessModes: readonly string[] | undefined;
  /** The driver has VOLUME_MOUNT_GROUP: it applies the group itself, given in the capability. */
  readonly driverAppliesGroup: boolean;
}

/**
 * Whether the kubelet changes the volume's ownership to the pod's fsGroup after NodePublishVolume
 * (`supportsFSGroup`, skipped when the driver has VOLUME_MOUNT_GROUP): never read-only, never with
 * policy None; always with File; with ReadWriteOnceWithFSType only when the volume has an fsType
 * and is ReadWriteOnce (an inline volume counts as such).
 */
export function kubeletAppliesFsGroup(c: FsGroupCase): boolean {
  if (c.driverAppliesGroup || c.fsGroup === undefined || c.policy === 'None' || c.readOnly) return false;
  if (c.policy === 'File') return true;
  if (c.fsType === '') return false;
  if (c.accessModes === undefined) return true;
  return c.accessModes.includes('ReadWriteOnce');
}

/** The fsGroup the driver is given in `volume_mount_group` (VOLUME_MOUNT_GROUP), or undefined. */
export function delegatedFsGroup(fsGroup: number | undefined, driverAppliesGroup: boolean): string | undefined {
  return driverAppliesGroup && fsGroup !== undefined ? String(fsGroup) : undefined;
}

/**
 * The CSI access mode of the PV's first access mode (`asCSIAccessModeV1`, or the multi-writer
 * mapping when the driver has SINGLE_NODE_MULTI_WRITER); ReadWriteOnce when the PV lists none or
 * the volume is inline.
 */
export function csiAccessMode(accessMode: string | undefined, singleNodeMultiWriter: boolean): CsiAccessMode {
  switch (accessMode ?? 'ReadWriteOnce') {
    case 'ReadWriteOnce':
      return singleNodeMultiWriter ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    case 'ReadWriteOncePod':
      return singleNodeMultiWriter ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
    default:
      return 'UNKNOWN';
  }
}

/** The pod's attributes the kubelet adds to the volume context when the CSIDriver asks (`getPodInfoAttrs`). */
export function podInfoAttributes(pod: V1Pod, mode: VolumeLifecycleMode): Record<string, string> {
  return {
    'csi.storage.k8s.io/pod.name': pod.metadata?.name ?? '',
    'csi.storage.k8s.io/pod.namespace': pod.metadata?.namespace ?? '',
    'csi.storage.k8s.io/pod.uid': pod.metadata?.uid ?? '',
    'csi.storage.k8s.io/serviceAccount.name': pod.spec?.serviceAccountName ?? '',
    'csi.storage.k8s.io/ephemeral': String(mode === 'Ephemeral'),
  };
}

/** The volume context of NodePublishVolume: the volume's attributes, then the pod's when the driver asks for them. */
export function publishVolumeContext(attributes: Readonly<Record<string, string>> | undefined, pod: V1Pod, options: { readonly podInfo: boolean; readonly mode: VolumeLifecycleMode }): Record<string, string> {
  return { ...(attributes ?? {}), ...(options.podInfo ? podInfoAttributes(pod, options.mode) : {}) };
}

/** What a VolumeAttachment says (`verifyAttachmentStatus`). */
export type AttachmentVerdict =
  | { readonly state: 'attached'; readonly publishContext: Readonly<Record<string, string>> }
  | { readonly state: 'pending' }
  | { readonly state: 'failed'; readonly message: string };

export function attachmentVerdict(attachment: V1VolumeAttachment | undefined): AttachmentVerdict {
  if (attachment === undefined) return { state: 'failed', message: 'volume attachment has been deleted' };
  if (attachment.metadata?.deletionTimestamp !== undefined) return { state: 'failed', message: 'volume attachment is being deleted' };
  const status = attachment.status;
  if (status?.attached === true) return { state: 'attached', publishContext: status.attachmentMetadata ?? {} };
  const attachError = status?.attachError?.message;
  if (attachError !== undefined) return { state: 'failed', message: attachError };
  return { state: 'pending' };
}
