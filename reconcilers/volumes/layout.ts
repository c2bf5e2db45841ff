/**
 * The kubelet's on-disk layout for pod volumes, so tools that know `/var/lib/kubelet` find their way:
 * `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<volumeName>`.
 */
import path from 'node:path';

/** Plugin directory names, as the kubelet spells them. */
export type VolumePluginDir = 'empty-dir' | 'configmap' | 'secret' | 'projected' | 'downward-api';

/** Mode of nodelet-owned directories above the volumes (the kubelet uses 0750). */
export const POD_DIR_MODE = 0o750;

/**
 * Throws unless `value` is usable as one path component: a pod UID or volume name that could
 * climb out of its directory would let an API object write anywhere on the host.
 */
export function assertPathComponent(kind: string, value: string): void {
  if (value === '' || value === '.' || value === '..' || value.includes('/') || value.includes('\0')) {
    throw new Error(`invalid ${kind} ${JSON.stringify(value)}: not usable as a directory name`);
  }
}

/** `<rootDir>/pods/<uid>` */
export function podDir(rootDir: string, podUid: string): string {
  assertPathComponent('pod UID', podUid);
  return path.join(rootDir, 'pods', podUid);
}

/** `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>` */
export function pluginDir(rootDir: string, podUid: string, plugin: VolumePluginDir): string {
  return path.join(podDir(rootDir, podUid), 'volumes', `kubernetes.io~${plugin}`);
}

/** `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<volumeName>` */
export function volumeDir(rootDir: string, podUid: string, plugin: VolumePluginDir, volumeName: string): string {
  assertPathComponent('volume name', volumeName);
  return path.join(pluginDir(rootDir, podUid, plugin), volumeName);
}
