/**
 * Pod volumes, materialised like the kubelet does: emptyDir, configMap, secret, projected
 * (serviceAccountToken, configMap, secret, downwardAPI), downwardAPI and hostPath, under
 * `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>`.
 *
 * Executor usage: `prepare(pod)` on every reconcile that starts something (refreshes contents and
 * tokens), `refresh(pod)` on the others while the pod runs (configMap, secret, projected and
 * downwardAPI contents follow their sources); `prepareContainerMounts(container, prepared)` (or the pure
 * `containerMounts`) before each `createContainer`; `cleanup(uid)` once the containers are gone.
 */
export type {
  IssuedToken,
  PreparedVolumes,
  ServiceAccountTokenRequest,
  VolumeManager,
  VolumeManagerOptions,
  VolumeSourceApi,
} from './types.js';
export { createVolumeManager } from './manager.js';
export { asksRecursiveReadOnly, containerMounts, resolveRecursiveReadOnly, type ContainerMountsOptions } from './mounts.js';
export { prepareContainerMounts } from './subpath.js';
export { createVolumeSourceApi } from './api.js';
export { isVolumeError, mountFailureMessages, VolumeError, type VolumeErrorReason } from './errors.js';
export { CsiDriverStore, type CsiDriverLookup, type CsiNodeClient, type CsiPluginOptions, type CsiVolumeApi } from './csi/types.js';
export { createCsiVolumeApi } from './csi/api.js';
