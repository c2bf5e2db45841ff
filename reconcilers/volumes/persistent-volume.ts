/**
 * persistentVolumeClaim volumes, as the kubelet's volume manager resolves them
 * (`desired_state_of_world_populator.go`: `getPVCExtractPV`, then the PV's plugin): the claim must
 * exist, not be being deleted, and be bound; its PV must exist and name the claim in its claimRef.
 * The PV's source then decides: `hostPath` and `local` (a directory on this node) are mounted from
 * the host; every other source is visibly unsupported (`FailedMount`), never silently empty.
 *
 * Like the kubelet, nodelet does not start the pod's sandbox until every volume is ready: a claim
 * that binds later lets a later sync start the pod.
 */
import type { V1ObjectReference, V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimVolumeSource, V1PersistentVolumeSpec } from '@kubernetes/client-node';
import { failedMount } from './errors.js';
import { statIfExists } from './fs-util.js';
import { prepareHostPath } from './host-path.js';
import type { VolumeSourceApi } from './types.js';

/** Where a bound claim's volume lives on this node. */
export interface ClaimedVolume {
  readonly hostPath: string;
  /** The pod asked for the claim read-only (`persistentVolumeClaim.readOnly`). */
  readonly readOnly: boolean;
  /** A `local` PV: its directory takes the pod's fsGroup, as the kubelet's local plugin does. */
  readonly ownershipManaged: boolean;
}

/** What {@link resolveClaim} needs. */
export interface ClaimRequest {
  readonly api: Pick<VolumeSourceApi, 'readPersistentVolumeClaim' | 'readPersistentVolume'>;
  readonly namespace: string;
  readonly volumeName: string;
  readonly source: V1PersistentVolumeClaimVolumeSource;
  /**
   * For a generic ephemeral volume: the pod the claim must have been created for (its controller
   * owner), as the kubelet's `ephemeral.VolumeIsForPod` checks; a claim of the same name that
   * another pod owns is refused.
   */
  readonly ephemeralFor?: { readonly name: string; readonly uid: string };
}

/** The claim of a generic ephemeral volume: `<pod name>-<volume name>`, as the controller names it. */
export function ephemeralClaimName(podName: string, volumeName: string): string {
  return `${podName}-${volumeName}`;
}

/** PV source fields nodelet cannot mount, by their name in `V1PersistentVolumeSpec`. */
const UNSUPPORTED_PV_SOURCES = [
  'csi', 'nfs', 'iscsi', 'fc', 'rbd', 'cephfs', 'glusterfs', 'awsElasticBlockStore', 'gcePersistentDisk', 'azureDisk', 'azureFile',
  'cinder', 'vsphereVolume', 'portworxVolume', 'photonPersistentDisk', 'flexVolume', 'flocker', 'quobyte', 'scaleIO', 'storageos',
] as const satisfies readonly (keyof V1PersistentVolumeSpec)[];

function claimError(req: ClaimRequest, cause: string): Error {
  return failedMount(req.volumeName, `error processing PVC ${req.namespace}/${req.source.claimName}: ${cause}`);
}

async function boundClaim(req: ClaimRequest): Promise<V1PersistentVolumeClaim> {
  const name = req.source.claimName;
  const claim = await req.api.readPersistentVolumeClaim(req.namespace, name);
  if (claim === undefined) throw claimError(req, `failed to fetch PVC from API server: persistentvolumeclaims "${name}" not found`);
  const owner = req.ephemeralFor;
  if (owner !== undefined && !claim.metadata?.ownerReferences?.some((o) => o.controller === true && o.kind === 'Pod' && o.uid === owner.uid)) {
    throw claimError(req, `PVC ${req.namespace}/${name} was not created for pod ${req.namespace}/${owner.name} (pod is not owner)`);
  }
  if (claim.metadata?.deletionTimestamp !== undefined) throw claimError(req, 'PVC is being deleted');
  const phase = claim.status?.phase ?? '';
  const volumeName = claim.spec?.volumeName ?? '';
  if (phase !== 'Bound' || volumeName === '') {
    throw claimError(req, `PVC ${req.namespace}/${name} has non-bound phase ("${phase}") or empty pvc.Spec.VolumeName ("${volumeName}")`);
  }
  return claim;
}

/** Whether a PV's claimRef names this claim (namespace, name and UID, as the kubelet checks). */
function refersTo(ref: V1ObjectReference, claim: V1PersistentVolumeClaim, namespace: string): boolean {
  return ref.name === claim.metadata?.name && ref.namespace === namespace && ref.uid === claim.metadata?.uid;
}

async function claimedVolume(req: ClaimRequest, claim: V1PersistentVolumeClaim): Promise<V1PersistentVolume> {
  const pvName = claim.spec?.volumeName ?? '';
  const pv = await req.api.readPersistentVolume(pvName);
  if (pv === undefined) throw claimError(req, `failed to fetch PV "${pvName}" from API server: persistentvolumes "${pvName}" not found`);
  const ref = pv.spec?.claimRef ?? {};
  if (!refersTo(ref, claim, req.namespace)) {
    throw claimError(req, `PV "${pvName}" is not bound to this claim (its claimRef is ${ref.namespace ?? ''}/${ref.name ?? ''} uid ${ref.uid ?? ''})`);
  }
  return pv;
}

async function localPath(req: ClaimRequest, pvName: string, path: string): Promise<string> {
  const stat = await statIfExists(path);
  if (stat === undefined) throw failedMount(req.volumeName, `local PV "${pvName}": path "${path}" does not exist`);
  if (!stat.isDirectory()) throw failedMount(req.volumeName, `local PV "${pvName}": path "${path}" is not a directory (block local volumes are not supported by nodelet)`);
  return path;
}

/**
 * Resolves a persistentVolumeClaim volume to a host path.
 * @throws VolumeError (`FailedMount`) naming the volume and the kubelet's cause when the claim is
 *   missing, being deleted, unbound, its PV missing or bound elsewhere, in block mode, or of a
 *   source nodelet cannot mount.
 */
export async function resolveClaim(req: ClaimRequest): Promise<ClaimedVolume> {
  return hostClaimedVolume(req, await boundVolume(req));
}

/**
 * The PV bound to the pod's claim, checked as the kubelet checks it (claim exists, not being
 * deleted, bound, its PV names the claim).
 * @throws VolumeError (`FailedMount`) with the kubelet's cause
 */
export async function boundVolume(req: ClaimRequest): Promise<V1PersistentVolume> {
  return claimedVolume(req, await boundClaim(req));
}

/**
 * A bound PV mounted from the host (`hostPath`, `local`).
 * @throws VolumeError (`FailedMount`) for block mode and every other source
 */
export async function hostClaimedVolume(req: ClaimRequest, pv: V1PersistentVolume): Promise<ClaimedVolume> {
  const pvName = pv.metadata?.name ?? '';
  const spec = pv.spec ?? {};
  const readOnly = req.source.readOnly === true;
  if (spec.volumeMode === 'Block') throw failedMount(req.volumeName, `PV "${pvName}" has volumeMode Block: block volumes are not supported by nodelet`);
  if (spec.hostPath !== undefined) {
    try {
      return { hostPath: await prepareHostPath(spec.hostPath), readOnly, ownershipManaged: false };
    } catch (error) {
      throw failedMount(req.volumeName, `hostPath PV "${pvName}": ${error instanceof Error ? error.message : String(error)}`, error);
    }
  }
  if (spec.local !== undefined) return { hostPath: await localPath(req, pvName, spec.local.path), readOnly, ownershipManaged: true };
  const type = UNSUPPORTED_PV_SOURCES.find((field) => spec[field] !== undefined) ?? 'unknown';
  throw failedMount(req.volumeName, `PV "${pvName}" is a ${type} volume: ${type} volumes are not supported by nodelet`);
}
