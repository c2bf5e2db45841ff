/** {@link VolumeSourceApi} over the real API server, with client-node's CoreV1Api. */
import {
  ApiException,
  AuthenticationV1TokenRequest,
  CoreV1Api,
  V1BoundObjectReference,
  V1TokenRequestSpec,
  type KubeConfig,
  type V1ConfigMap,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1Secret,
} from '@kubernetes/client-node';
import type { IssuedToken, ServiceAccountTokenRequest, VolumeSourceApi } from './types.js';

/** The API server's failure text (`status.message`), not client-node's multi-line dump of the response. */
function apiFailure(action: string, error: unknown): Error {
  if (!(error instanceof ApiException)) {
    return new Error(`${action}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const body: unknown = (error as ApiException<unknown>).body;
  let message: unknown = body;
  if (typeof body === 'string') {
    try {
      message = JSON.parse(body) as unknown;
    } catch {
      message = body;
    }
  }
  if (typeof message === 'object' && message !== null && 'message' in message && typeof message.message === 'string') {
    message = message.message;
  }
  const text = typeof message === 'string' && message !== '' ? message : `HTTP ${error.code}`;
  return new Error(`${action}: ${text}`, { cause: error });
}

function isNotFound(error: unknown): boolean {
  return error instanceof ApiException && error.code === 404;
}

async function readOrUndefined<T>(action: string, read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw apiFailure(action, error);
  }
}

/** The TokenRequest object: the pod-bound token the kubelet asks for. */
function tokenRequestBody(req: ServiceAccountTokenRequest): AuthenticationV1TokenRequest {
  const boundObjectRef = Object.assign(new V1BoundObjectReference(), { apiVersion: 'v1', kind: 'Pod', name: req.podName, uid: req.podUid });
  const spec = Object.assign(new V1TokenRequestSpec(), {
    ...(req.audience === undefined ? {} : { audiences: [req.audience] }),
    expirationSeconds: req.expirationSeconds,
    boundObjectRef,
  });
  return Object.assign(new AuthenticationV1TokenRequest(), { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec });
}

/** Reads config maps and secrets and requests tokens with the given credentials. */
export function createVolumeSourceApi(kubeConfig: KubeConfig): VolumeSourceApi {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
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
