/** Which plugin handles a pod volume. */
import type {
  V1CSIVolumeSource,
  V1ConfigMapVolumeSource,
  V1DownwardAPIVolumeSource,
  V1EmptyDirVolumeSource,
  V1HostPathVolumeSource,
  V1ImageVolumeSource,
  V1PersistentVolumeClaimVolumeSource,
  V1ProjectedVolumeSource,
  V1SecretVolumeSource,
  V1Volume,
} from '@kubernetes/client-node';

/** The emptyDir fields nodelet reads (a plain shape, so a defaulted `{}` needs no class instance). */
export type EmptyDirSource = Pick<V1EmptyDirVolumeSource, 'medium' | 'sizeLimit'>;

/** A pod volume by the source it uses. */
export type ClassifiedVolume =
  | { readonly kind: 'emptyDir'; readonly source: EmptyDirSource }
  | { readonly kind: 'configMap'; readonly source: V1ConfigMapVolumeSource }
  | { readonly kind: 'secret'; readonly source: V1SecretVolumeSource }
  | { readonly kind: 'projected'; readonly source: V1ProjectedVolumeSource }
  | { readonly kind: 'downwardAPI'; readonly source: V1DownwardAPIVolumeSource }
  | { readonly kind: 'hostPath'; readonly source: V1HostPathVolumeSource }
  | { readonly kind: 'persistentVolumeClaim'; readonly source: V1PersistentVolumeClaimVolumeSource }
  /** A generic ephemeral volume: the claim `<pod>-<volume>` the ephemeral volume controller creates. */
  | { readonly kind: 'ephemeral' }
  /** An OCI image or artifact the runtime mounts read-only (the kubelet's image plugin mounts nothing itself). */
  | { readonly kind: 'image'; readonly source: V1ImageVolumeSource }
  /** An inline CSI ephemeral volume, published by its driver (`csi/`). */
  | { readonly kind: 'csi'; readonly source: V1CSIVolumeSource }
  | { readonly kind: 'unsupported'; readonly type: string };

/** Volume sources nodelet has no plugin for, by their field name in `V1Volume`. */
const UNSUPPORTED_SOURCES = [
  'nfs',
  'iscsi',
  'fc',
  'rbd',
  'cephfs',
  'glusterfs',
  'gitRepo',
  'awsElasticBlockStore',
  'gcePersistentDisk',
  'azureDisk',
  'azureFile',
  'cinder',
  'vsphereVolume',
  'portworxVolume',
  'photonPersistentDisk',
  'flexVolume',
  'flocker',
  'quobyte',
  'scaleIO',
  'storageos',
] as const satisfies readonly (keyof V1Volume)[];

/**
 * Classifies a volume. A volume with no source at all is an emptyDir, as the API server's
 * defaulting makes it.
 */
export function classifyVolume(volume: V1Volume): ClassifiedVolume {
  if (volume.emptyDir !== undefined) return { kind: 'emptyDir', source: volume.emptyDir };
  if (volume.configMap !== undefined) return { kind: 'configMap', source: volume.configMap };
  if (volume.secret !== undefined) return { kind: 'secret', source: volume.secret };
  if (volume.projected !== undefined) return { kind: 'projected', source: volume.projected };
  if (volume.downwardAPI !== undefined) return { kind: 'downwardAPI', source: volume.downwardAPI };
  if (volume.hostPath !== undefined) return { kind: 'hostPath', source: volume.hostPath };
  if (volume.persistentVolumeClaim !== undefined) return { kind: 'persistentVolumeClaim', source: volume.persistentVolumeClaim };
  if (volume.ephemeral !== undefined) return { kind: 'ephemeral' };
  if (volume.image !== undefined) return { kind: 'image', source: volume.image };
  if (volume.csi !== undefined) return { kind: 'csi', source: volume.csi };
  const unsupported = UNSUPPORTED_SOURCES.find((field) => volume[field] !== undefined);
  if (unsupported !== undefined) return { kind: 'unsupported', type: unsupported };
  return { kind: 'emptyDir', source: {} };
}

/**
 * The kubelet's `RequiresRemount` plugins: configMap, secret, projected and downwardAPI volumes,
 * whose contents follow their sources while the pod runs.
 */
export const FOLLOWING_SOURCE_KINDS: ReadonlySet<ClassifiedVolume['kind']> = new Set(['configMap', 'secret', 'projected', 'downwardAPI']);
