/**
 * Where the kubelet's CSI plugin keeps a volume (`pkg/volume/csi`), and the names it derives:
 *
 * ```
 * <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount   staging path (NodeStageVolume)
 * <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/vol_data.json  what unstaging needs
 * <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount                    target path (NodePublishVolume)
 * <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/vol_data.json            what unpublishing needs
 * ```
 * `<specName>` is the PV's name for a claim's volume and the pod volume's name for an inline one.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { assertPathComponent, podDir } from '../layout.js';

/** The pod volume plugin directory's name. */
export const CSI_POD_PLUGIN_DIR = 'kubernetes.io~csi';
/** The kubelet's `CSIPluginName`. */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
export const VOL_DATA_FILE = 'vol_data.json';

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** `<root>/pods/<uid>/volumes/kubernetes.io~csi` */
export function csiPodPluginDir(rootDir: string, podUid: string): string {
  return path.join(podDir(rootDir, podUid), 'volumes', CSI_POD_PLUGIN_DIR);
}

/** The target path of NodePublishVolume: `<root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount`. */
export function csiTargetPath(rootDir: string, podUid: string, specName: string): string {
  assertPathComponent('volume name', specName);
  return path.join(csiPodPluginDir(rootDir, podUid), specName, 'mount');
}

/** The staging path of NodeStageVolume (the kubelet's `makeDeviceMountPath`). */
export function csiStagingPath(rootDir: string, driverName: string, volumeHandle: string): string {
  assertPathComponent('CSI driver name', driverName);
  if (volumeHandle === '') throw new Error('makeDeviceMountPath failed, CSIPersistentVolumeSource volume handle is empty');
  return path.join(rootDir, 'plugins', CSI_PLUGIN_NAME, driverName, sha256Hex(volumeHandle), 'globalmount');
}

/** The VolumeAttachment the attach-detach controller makes: `csi-<sha256(volumeHandle + driver + node)>`. */
export function attachmentName(volumeHandle: string, driverName: string, nodeName: string): string {
  return `csi-${sha256Hex(`${volumeHandle}${driverName}${nodeName}`)}`;
}

/** The volume handle of an inline ephemeral volume: `csi-<sha256(podUID + volume name)>`. */
export function ephemeralVolumeHandle(podUid: string, volumeName: string): string {
  return `csi-${sha256Hex(`${podUid}${volumeName}`)}`;
}

/** The unique name the Node's `volumesInUse` and `volumesAttached` carry: `kubernetes.io/csi/<driver>^<volumeHandle>`. */
export function uniqueVolumeName(driverName: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driverName}^${volumeHandle}`;
}
