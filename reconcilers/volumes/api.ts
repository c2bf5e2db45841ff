/** {@link VolumeSourceApi} over the real API server. */
import type {
  AuthenticationV1TokenRequest,
  V1ConfigMap,
  V1beta1ClusterTrustBundle,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Secret,
} from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import { CertificatesV1Client } from '../../kube/groups.js';
import type { TrustBundle } from './cluster-trust-bundle.js';
import { apiStatusCode, apiStatusMessage, isNotFound } from '../../util/api-errors.js';
import type { IssuedToken, ServiceAccountTokenRequest, VolumeSourceApi } from './types.js';

/** The API server's failure text (`status.message`), not a dump of the whole response. */
function apiFailure(action: string, error: unknown): Error {
  const code = apiStatusCode(error);
  if (code === undefined) return new Error(`${action}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  return new Error(`${action}: ${apiStatusMessage(error) ?? `HTTP ${code}`}`, { cause: error });
}

async function readOrUndefined<T>(action: string, read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw apiFailure(action, error);
  }
}

function trustBundleOf(bundle: V1beta1ClusterTrustBundle): TrustBundle {
  return { name: bundle.metadata?.name ?? '', signerName: bundle.spec.signerName ?? '', labels: bundle.metadata?.labels ?? {}, trustBundle: bundle.spec.trustBundle };
}

/** The TokenRequest object: the pod-bound token the kubelet asks for. */
function tokenRequestBody(req: ServiceAccountTokenRequest): AuthenticationV1TokenRequest {
  const boundObjectRef = { apiVersion: 'v1', kind: 'Pod', name: req.podName, uid: req.podUid };
  const spec = {
    ...(req.audience === undefined ? {} : { audiences: [req.audience] }),
    expirationSeconds: req.expirationSeconds,
    boundObjectRef,
  };
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec };
}

/** Reads config maps and secrets and requests tokens with the given credentials. */
export function createVolumeSourceApi(kube: KubeClient): VolumeSourceApi {
  const core = new CoreV1Client(kube);
  const certificates = new CertificatesV1Client(kube);
  return {
    async readClusterTrustBundle(name: string): Promise<TrustBundle | undefined> {
      const bundle = await readOrUndefined(`get clustertrustbundle ${name}`, () => certificates.readClusterTrustBundle({ name }));
      return bundle === undefined ? undefined : trustBundleOf(bundle);
    },
    async listClusterTrustBundles(labelSelector: string): Promise<TrustBundle[]> {
      try {
        return (await certificates.listClusterTrustBundle({ labelSelector })).items.map(trustBundleOf);
      } catch (error) {
        throw apiFailure('list clustertrustbundles', error);
      }
    },
    readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
      return readOrUndefined(`get configmap ${namespace}/${name}`, () => core.readNamespacedConfigMap({ namespace, name }));
    },
    readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
      return readOrUndefined(`get secret ${namespace}/${name}`, () => core.readNamespacedSecret({ namespace, name }));
    },
    readPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
      return readOrUndefined(`get persistentvolumeclaim ${namespace}/${name}`, () => core.readNamespacedPersistentVolumeClaim({ namespace, name }));
    },
    readPersistentVolume(name: string): Promise<V1PersistentVolume | undefined> {
      return readOrUndefined(`get persistentvolume ${name}`, () => core.readPersistentVolume({ name }));
    },
    async requestServiceAccountToken(req: ServiceAccountTokenRequest): Promise<IssuedToken> {
      const action = `create token for serviceaccount ${req.namespace}/${req.serviceAccountName}`;
      let response;
      try {
        response = await core.createNamespacedServiceAccountToken({
          namespace: req.namespace,
          name: req.serviceAccountName,
          body: tokenRequestBody(req),
        });
      } catch (error) {
        throw apiFailure(action, error);
      }
      const token = response.status?.token ?? '';
      const expiresAt = response.status?.expirationTimestamp;
      if (token === '' || expiresAt === undefined) throw new Error(`${action}: the response carries no token or expiry`);
      return { token, expiresAt: new Date(expiresAt) };
    },
  };
}
