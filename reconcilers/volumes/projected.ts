/**
 * projected volumes (`pkg/volume/projected`): several sources merged into one directory. Supported
 * sources: serviceAccountToken, configMap, secret, downwardAPI, clusterTrustBundle
 * (`cluster-trust-bundle.ts`); podCertificate is refused. This is what the ServiceAccount
 * admission plugin adds to every pod as `kube-api-access-<x>`.
 */
import type { V1ClusterTrustBundleProjection, V1Pod, V1ProjectedVolumeSource, V1ServiceAccountTokenProjection, V1VolumeProjection } from '@kubernetes/client-node';
import { configMapPayload } from './configmap.js';
import { downwardApiPayload } from './downward-api.js';
import type { NodeAllocatable } from '../model/resource-field.js';
import { describeCause } from './errors.js';
import { cleanPayloadPath, DEFAULT_FILE_MODE, fileMode, mergePayload, type Payload } from './payload.js';
import { secretPayload } from './secret.js';
import { clusterTrustBundleContent } from './cluster-trust-bundle.js';
import { DEFAULT_TOKEN_EXPIRATION_SECONDS, type ServiceAccountTokens } from './service-account-token.js';
import type { VolumeSourceApi } from './types.js';

/** A token file readable by its owner only (and the fsGroup, which ownership adds). */
const PRIVATE_TOKEN_MODE = 0o600;

/** Everything {@link projectedPayload} needs. */
export interface ProjectedPayloadRequest {
  readonly api: VolumeSourceApi;
  readonly tokens: ServiceAccountTokens;
  readonly pod: V1Pod;
  readonly volumeName: string;
  readonly source: V1ProjectedVolumeSource;
  /** The single user all containers run as (`fsUserOf`): owns the token file. */
  readonly fsUser?: number;
  /** The pod's fsGroup: with it (or fsUser) the token file is 0600, as in the kubelet. */
  readonly fsGroup?: number;
  /** The node's allocatable CPU and memory, for downwardAPI resourceFieldRef items. */
  readonly allocatable: NodeAllocatable;
}

/**
 * Collects the files of every source. Every source is attempted; failures are reported together.
 * @throws Error listing each source that failed (missing object or key, unsupported source, API error).
 */
export async function projectedPayload(request: ProjectedPayloadRequest): Promise<Payload> {
  const defaultMode = fileMode(request.source.defaultMode, DEFAULT_FILE_MODE);
  const payload: Payload = new Map();
  const failures: string[] = [];
  for (const projection of request.source.sources ?? []) {
    try {
      mergePayload(payload, await projectionPayload(request, projection, defaultMode));
    } catch (error) {
      failures.push(describeCause(error));
    }
  }
  if (failures.length > 0) throw new Error(failures.join('; '));
  return payload;
}

async function projectionPayload(request: ProjectedPayloadRequest, projection: V1VolumeProjection, defaultMode: number): Promise<Payload> {
  const namespace = request.pod.metadata?.namespace ?? '';
  const { api } = request;
  if (projection.serviceAccountToken !== undefined) return tokenPayload(request, projection.serviceAccountToken, defaultMode);
  if (projection.configMap !== undefined) return configMapPayload({ api, namespace, source: projection.configMap, defaultMode });
  if (projection.secret !== undefined) {
    const { name, items, optional } = projection.secret;
    return secretPayload({ api, namespace, source: { name: name ?? '', items, optional }, defaultMode });
  }
  if (projection.downwardAPI !== undefined) return downwardApiPayload({ items: projection.downwardAPI.items, pod: request.pod, defaultMode, allocatable: request.allocatable });
  if (projection.clusterTrustBundle !== undefined) return trustBundlePayload(request, projection.clusterTrustBundle, defaultMode);
  if (projection.podCertificate !== undefined) throw new Error('projected source podCertificate is not supported by nodelet');
  throw new Error('a projected source sets no projection');
}

/** The bundle file: 0600 (and the single user's) when a user or fsGroup owns the volume, as the kubelet's. */
async function trustBundlePayload(request: ProjectedPayloadRequest, source: V1ClusterTrustBundleProjection, defaultMode: number): Promise<Payload> {
  const content = await clusterTrustBundleContent(request.api, source);
  const restricted = request.fsUser !== undefined || request.fsGroup !== undefined;
  const file = { data: Buffer.from(content), mode: restricted ? PRIVATE_TOKEN_MODE : defaultMode, ...(request.fsUser === undefined ? {} : { fsUser: request.fsUser }) };
  return new Map([[cleanPayloadPath(source.path), file]]);
}

async function tokenPayload(request: ProjectedPayloadRequest, source: V1ServiceAccountTokenProjection, defaultMode: number): Promise<Payload> {
  const target = cleanPayloadPath(source.path);
  let token: string;
  try {
    token = await request.tokens.token({
      pod: request.pod,
      volumeName: request.volumeName,
      ...(source.audience === undefined ? {} : { audience: source.audience }),
      expirationSeconds: source.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS,
    });
  } catch (error) {
    throw new Error(`failed to fetch token: ${describeCause(error)}`, { cause: error });
  }
  const restricted = request.fsUser !== undefined || request.fsGroup !== undefined;
  const file = {
    data: Buffer.from(token),
    mode: restricted ? PRIVATE_TOKEN_MODE : defaultMode,
    ...(request.fsUser === undefined ? {} : { fsUser: request.fsUser }),
  };
  return new Map([[target, file]]);
}
