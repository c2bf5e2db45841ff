/**
 * A CSI volume as the plugin needs it, from a PV bound to the pod's claim or from an inline `csi`
 * pod volume (the kubelet's `volume.Spec` with its CSI source).
 */
import type { V1CSIVolumeSource, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import type { VolumeLifecycleMode } from './decisions.js';
import { ephemeralVolumeHandle } from './paths.js';

/** A secret the driver is given, by namespace and name. */
export interface SecretRef {
  readonly namespace: string;
  readonly name: string;
}

export interface CsiVolumeSpec {
  /** The PV's name for a claim's volume, the pod volume's name for an inline one (the kubelet's `spec.Name()`). */
  readonly specName: string;
  readonly driverName: string;
  readonly volumeHandle: string;
  readonly mode: VolumeLifecycleMode;
  readonly readOnly: boolean;
  readonly fsType: string;
  readonly mountOptions: readonly string[];
  /** The PV's access modes; undefined for an inline volume. */
  readonly accessModes: readonly string[] | undefined;
  readonly attributes: Readonly<Record<string, string>>;
  readonly stageSecretRef?: SecretRef;
  readonly publishSecretRef?: SecretRef;
}

function secretRef(ref: { name?: string; namespace?: string } | undefined, defaultNamespace: string): SecretRef | undefined {
  if (ref?.name === undefined || ref.name === '') return undefined;
  return { namespace: ref.namespace ?? defaultNamespace, name: ref.name };
}

/** The spec of a PV with a `csi` source; `claimReadOnly`: the pod's `persistentVolumeClaim.readOnly`. */
export function persistentCsiSpec(pv: V1PersistentVolume, claimReadOnly: boolean): CsiVolumeSpec | undefined {
  const csi = pv.spec?.csi;
  if (csi === undefined) return undefined;
  const stage = secretRef(csi.nodeStageSecretRef, '');
  const publish = secretRef(csi.nodePublishSecretRef, '');
  return {
    specName: pv.metadata?.name ?? '',
    driverName: csi.driver,
    volumeHandle: csi.volumeHandle,
    mode: 'Persistent',
    readOnly: claimReadOnly,
    fsType: csi.fsType ?? '',
    mountOptions: pv.spec?.mountOptions ?? [],
    accessModes: pv.spec?.accessModes ?? [],
    attributes: csi.volumeAttributes ?? {},
    ...(stage === undefined ? {} : { stageSecretRef: stage }),
    ...(publish === undefined ? {} : { publishSecretRef: publish }),
  };
}

/** The spec of an inline ephemeral `csi` pod volume: its handle derives from the pod's UID and the volume's name. */
export function inlineCsiSpec(pod: V1Pod, volumeName: string, source: V1CSIVolumeSource): CsiVolumeSpec {
  const namespace = pod.metadata?.namespace ?? '';
  const publish = secretRef(source.nodePublishSecretRef, namespace);
  return {
    specName: volumeName,
    driverName: source.driver,
    volumeHandle: ephemeralVolumeHandle(pod.metadata?.uid ?? '', volumeName),
    mode: 'Ephemeral',
    readOnly: source.readOnly === true,
    fsType: source.fsType ?? '',
    mountOptions: [],
    accessModes: undefined,
    attributes: source.volumeAttributes ?? {},
    ...(publish === undefined ? {} : { publishSecretRef: { namespace, name: publish.name } }),
  };
}
