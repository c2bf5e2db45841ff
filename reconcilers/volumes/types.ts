/**
 * The volume manager's contract with the executor and with the API server.
 *
 * The executor calls {@link VolumeManager.prepare} before creating a pod's sandbox (and again on
 * every reconcile that starts something; {@link VolumeManager.refresh} on the others, which keeps
 * configMap/secret/projected/downwardAPI contents and service-account tokens current),
 * builds each container's CRI mounts with `containerMounts()`, and calls
 * {@link VolumeManager.cleanup} once the pod's containers are gone.
 */
import type { TrustBundleApi } from './cluster-trust-bundle.js';
import type { CsiPluginOptions } from './csi/types.js';
import type { PodKey } from '../../util/pod-key.js';
import type { V1ConfigMap, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** A TokenRequest for a pod's service account, bound to the pod. */
export interface ServiceAccountTokenRequest {
  readonly namespace: string;
  readonly serviceAccountName: string;
  /** Omitted: the API server's default audiences. */
  readonly audience?: string;
  readonly expirationSeconds: number;
  readonly podName: string;
  readonly podUid: string;
}

/** A token the API server issued. */
export interface IssuedToken {
  readonly token: string;
  /** The nominal expiry the API server reports (`status.expirationTimestamp`). */
  readonly expiresAt: Date;
}

/** What volumes need from the API server (narrow, so tests pass plain data). */
export interface VolumeSourceApi extends TrustBundleApi {
  /** @returns the config map, or `undefined` when it does not exist. Other failures throw. */
  readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  /** @returns the secret (its `data` base64-encoded, as the API serves it), or `undefined` when it does not exist. */
  readSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
  /** @returns the claim, or `undefined` when it does not exist. Other failures throw. */
  readPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined>;
  /** @returns the persistent volume, or `undefined` when it does not exist. Other failures throw. */
  readPersistentVolume(name: string): Promise<V1PersistentVolume | undefined>;
  /** Creates a TokenRequest for `serviceAccountName`, bound to the pod (kind Pod, name + uid). */
  requestServiceAccountToken(req: ServiceAccountTokenRequest): Promise<IssuedToken>;
}

/** Dependencies of {@link VolumeManager}. */
export interface VolumeManagerOptions {
  /** nodelet's root directory; pod data lives in `<rootDir>/pods/<uid>`. */
  readonly rootDir: string;
  readonly api: VolumeSourceApi;
  /** Time source for token refresh and timestamped data directories; defaults to `new Date()`. */
  readonly clock?: () => Date;
  readonly logger: Logger;
  /** The node's allocatable memory: the largest memory-backed emptyDir. Default: the host's memory. */
  readonly nodeAllocatableMemoryBytes?: number;
  /** The node's allocatable CPU (millicores), for downward-API limits.cpu of containers without one. Default: the host's CPUs. */
  readonly nodeAllocatableMilliCpu?: number;
  /** The CSI volume plugin's drivers and API (`csi/`); absent: `csi` volumes and CSI PVs end in FailedMount as unsupported. */
  readonly csi?: CsiPluginOptions;
}

/** Where each of a pod's volumes lives on the host. */
export interface PreparedVolumes {
  /** Volume name → host directory (or file, for a hostPath file). */
  readonly hostPaths: ReadonlyMap<string, string>;
  /**
   * Volumes that containers must mount read-only whatever their `volumeMounts` say
   * (configMap, secret, projected, downwardAPI: the kubelet mounts them read-only).
   * Absent means none.
   */
  readonly readOnlyVolumes?: ReadonlySet<string>;
}

/**
 * Materialises a pod's volumes on disk in the kubelet's layout:
 * `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<volumeName>`.
 *
 * Calls for one pod UID must not overlap (the queue runs one reconcile per UID at a time); calls
 * for different pods may.
 */
export interface VolumeManager {
  /**
   * Creates or refreshes every volume of the pod. Idempotent: re-running rewrites
   * configMap/secret/projected/downwardAPI contents atomically when they changed (a reader sees
   * either the old or the new set of files, never a mix) and refreshes a service-account token once
   * it is past 80% of its lifetime.
   *
   * Every volume is attempted even when an earlier one fails (so a running pod still gets its token
   * refreshed while one of its config maps is missing); then the failures are thrown.
   *
   * @throws VolumeError with reason `FailedMount` and a message naming the volume and the cause
   *   (e.g. `volume "cfg": configmap "x" not found`) when a volume cannot be prepared. A missing
   *   source marked `optional: true` is not an error (the volume is empty). Volume types other than
   *   emptyDir, configMap, secret, projected (serviceAccountToken, configMap, secret, downwardAPI),
   *   downwardAPI and hostPath fail with `volume "<name>": <type> volumes are not supported by nodelet`.
   */
  prepare(pod: V1Pod, signal?: AbortSignal): Promise<PreparedVolumes>;
  /**
   * Brings a running pod's configMap, secret, projected and downwardAPI volumes up to date with
   * their sources (and renews a service-account token past 80% of its lifetime), as the kubelet's
   * volume manager remounts `RequiresRemount` volumes on pod syncs. Leaves every other volume
   * alone. Same atomicity and errors as {@link prepare}.
   */
  refresh(pod: V1Pod): Promise<void>;
  /**
   * Tears down the volumes of a pod that terminated but whose object remains (Succeeded, Failed,
   * evicted): unmounts them and removes `<rootDir>/pods/<uid>/volumes`, as the kubelet unmounts a
   * terminated pod's volumes. The rest of the pod directory (its containers' termination
   * messages) stays until {@link cleanup}. Call it only after the pod's containers are gone.
   * Idempotent.
   */
  teardown(podUid: string, signal?: AbortSignal): Promise<void>;
  /**
   * Removes `<rootDir>/pods/<uid>` entirely. Call it only after the pod's containers are gone.
   * Idempotent.
   */
  cleanup(podUid: string, signal?: AbortSignal): Promise<void>;
  /**
   * The Node's `volumesInUse` (the kubelet's `GetVolumesInUse`): the unique names
   * (`kubernetes.io/csi/<driver>^<handle>`) of the device-mountable volumes pods use or are being
   * set up with, sorted. Absent or empty: none.
   */
  volumesInUse?(): string[];
  /** Forgets the pod's cached service-account tokens (a per-pod manager on the pod lifecycle). */
  podForgotten(key: PodKey): void;
}
