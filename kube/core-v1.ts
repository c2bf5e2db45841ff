/**
 * The core/v1 operations the agent uses, with client-node's `CoreV1Api` names and parameter
 * objects (so call sites and test doubles read the same), on {@link KubeClient}.
 */
import type {
  AuthenticationV1TokenRequest,
  CoreV1Event,
  V1ConfigMap,
  V1DeleteOptions,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodList,
  V1Secret,
  V1ServiceList,
  V1Status,
} from '@kubernetes/client-node';
import { segment as s, type KubeClient, type PatchType } from './client.js';

interface Named {
  readonly name: string;
}
interface Namespaced {
  readonly namespace: string;
}
interface Selected {
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
}

const ns = (namespace: string, resource: string): string => `/api/v1/namespaces/${s(namespace)}/${resource}`;

/** core/v1 through one {@link KubeClient}. */
export class CoreV1Client {
  constructor(private readonly kube: KubeClient) {}

  listPodForAllNamespaces(p: Selected): Promise<V1PodList> {
    return this.kube.get('/api/v1/pods', { ...p });
  }

  listNamespacedPod(p: Namespaced & Selected): Promise<V1PodList> {
    const { namespace, ...query } = p;
    return this.kube.get(ns(namespace, 'pods'), query);
  }

  createNamespacedPod(p: Namespaced & { readonly body: V1Pod }): Promise<V1Pod> {
    return this.kube.create(ns(p.namespace, 'pods'), p.body);
  }

  deleteNamespacedPod(p: Named & Namespaced & { readonly gracePeriodSeconds?: number; readonly body?: V1DeleteOptions }): Promise<V1Pod | V1Status> {
    return this.kube.delete(`${ns(p.namespace, 'pods')}/${s(p.name)}`, p.body, { gracePeriodSeconds: p.gracePeriodSeconds });
  }

  patchNamespacedPodStatus(p: Named & Namespaced & { readonly body: object }, type: PatchType): Promise<V1Pod> {
    return this.kube.patch(`${ns(p.namespace, 'pods')}/${s(p.name)}/status`, p.body, type);
  }

  readNode(p: Named): Promise<V1Node> {
    return this.kube.get(`/api/v1/nodes/${s(p.name)}`);
  }

  createNode(p: { readonly body: V1Node }): Promise<V1Node> {
    return this.kube.create('/api/v1/nodes', p.body);
  }

  patchNode(p: Named & { readonly body: object }, type: PatchType): Promise<V1Node> {
    return this.kube.patch(`/api/v1/nodes/${s(p.name)}`, p.body, type);
  }

  patchNodeStatus(p: Named & { readonly body: object }, type: PatchType): Promise<V1Node> {
    return this.kube.patch(`/api/v1/nodes/${s(p.name)}/status`, p.body, type);
  }

  listServiceForAllNamespaces(p: Selected): Promise<V1ServiceList> {
    return this.kube.get('/api/v1/services', { ...p });
  }

  readNamespacedConfigMap(p: Named & Namespaced): Promise<V1ConfigMap> {
    return this.kube.get(`${ns(p.namespace, 'configmaps')}/${s(p.name)}`);
  }

  readNamespacedSecret(p: Named & Namespaced): Promise<V1Secret> {
    return this.kube.get(`${ns(p.namespace, 'secrets')}/${s(p.name)}`);
  }

  readNamespacedPersistentVolumeClaim(p: Named & Namespaced): Promise<V1PersistentVolumeClaim> {
    return this.kube.get(`${ns(p.namespace, 'persistentvolumeclaims')}/${s(p.name)}`);
  }

  readPersistentVolume(p: Named): Promise<V1PersistentVolume> {
    return this.kube.get(`/api/v1/persistentvolumes/${s(p.name)}`);
  }

  createNamespacedServiceAccountToken(p: Named & Namespaced & { readonly body: AuthenticationV1TokenRequest }): Promise<AuthenticationV1TokenRequest> {
    return this.kube.create(`${ns(p.namespace, 'serviceaccounts')}/${s(p.name)}/token`, p.body);
  }

  createNamespacedEvent(p: Namespaced & { readonly body: CoreV1Event }): Promise<CoreV1Event> {
    return this.kube.create(ns(p.namespace, 'events'), p.body);
  }

  patchNamespacedEvent(p: Named & Namespaced & { readonly body: object }, type: PatchType): Promise<CoreV1Event> {
    return this.kube.patch(`${ns(p.namespace, 'events')}/${s(p.name)}`, p.body, type);
  }
}
