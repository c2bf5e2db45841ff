/** {@link CsiVolumeApi} over the real API server: CSIDriver and VolumeAttachment objects, and the Node (its volumesInUse and volumesAttached). */
import type { V1CSIDriver, V1Node, V1VolumeAttachment } from '@kubernetes/client-node';
import { segment as s, type KubeClient } from '../../../kube/client.js';
import { apiStatusMessage, isNotFound } from '../../../util/api-errors.js';
import type { CsiVolumeApi } from './types.js';

async function readOrUndefined<T>(kube: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await kube.get<T>(path);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new Error(apiStatusMessage(error) ?? (error instanceof Error ? error.message : String(error)), { cause: error });
  }
}

export function createCsiVolumeApi(kube: KubeClient): CsiVolumeApi {
  return {
    readCSIDriver: (name) => readOrUndefined<V1CSIDriver>(kube, `/apis/storage.k8s.io/v1/csidrivers/${s(name)}`),
    readVolumeAttachment: (name) => readOrUndefined<V1VolumeAttachment>(kube, `/apis/storage.k8s.io/v1/volumeattachments/${s(name)}`),
    readNode: (name) => readOrUndefined<V1Node>(kube, `/api/v1/nodes/${s(name)}`),
  };
}
