/**
 * The operations the agent uses outside core/v1, with client-node's method names and parameter
 * objects, on {@link KubeClient}: the node's Lease, RuntimeClasses, its serving-certificate CSRs,
 * the node server's token and access reviews, and NodeAgent custom objects.
 */
import type {
  V1beta1ClusterTrustBundle,
  V1beta1ClusterTrustBundleList,
  V1CertificateSigningRequest,
  V1Lease,
  V1RuntimeClass,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import { segment as s, type KubeClient } from './client.js';

/** coordination.k8s.io/v1 Leases. */
export class CoordinationV1Client {
  constructor(private readonly kube: KubeClient) {}

  private path(namespace: string, name?: string): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${s(namespace)}/leases${name === undefined ? '' : `/${s(name)}`}`;
  }

  readNamespacedLease(p: { readonly name: string; readonly namespace: string }): Promise<V1Lease> {
    return this.kube.get(this.path(p.namespace, p.name));
  }

  createNamespacedLease(p: { readonly namespace: string; readonly body: V1Lease }): Promise<V1Lease> {
    return this.kube.create(this.path(p.namespace), p.body);
  }

  replaceNamespacedLease(p: { readonly name: string; readonly namespace: string; readonly body: V1Lease }): Promise<V1Lease> {
    return this.kube.replace(this.path(p.namespace, p.name), p.body);
  }
}

/** node.k8s.io/v1 RuntimeClasses. */
export class NodeV1Client {
  constructor(private readonly kube: KubeClient) {}

  readRuntimeClass(p: { readonly name: string }): Promise<V1RuntimeClass> {
    return this.kube.get(`/apis/node.k8s.io/v1/runtimeclasses/${s(p.name)}`);
  }
}

/** certificates.k8s.io/v1 CertificateSigningRequests. */
export class CertificatesV1Client {
  constructor(private readonly kube: KubeClient) {}

  createCertificateSigningRequest(p: { readonly body: V1CertificateSigningRequest }): Promise<V1CertificateSigningRequest> {
    return this.kube.create('/apis/certificates.k8s.io/v1/certificatesigningrequests', p.body);
  }

  readCertificateSigningRequest(p: { readonly name: string }): Promise<V1CertificateSigningRequest> {
    return this.kube.get(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${s(p.name)}`);
  }

  /** A ClusterTrustBundle (v1, GA in 1.37; client-node has only the beta's type, the same shape). */
  readClusterTrustBundle(p: { readonly name: string }): Promise<V1beta1ClusterTrustBundle> {
    return this.kube.get(`/apis/certificates.k8s.io/v1/clustertrustbundles/${s(p.name)}`);
  }

  listClusterTrustBundle(p: { readonly labelSelector: string }): Promise<V1beta1ClusterTrustBundleList> {
    return this.kube.get('/apis/certificates.k8s.io/v1/clustertrustbundles', p.labelSelector === '' ? {} : { labelSelector: p.labelSelector });
  }
}

/** authentication.k8s.io/v1 TokenReviews. */
export class AuthenticationV1Client {
  constructor(private readonly kube: KubeClient) {}

  createTokenReview(p: { readonly body: V1TokenReview }): Promise<V1TokenReview> {
    return this.kube.create('/apis/authentication.k8s.io/v1/tokenreviews', p.body);
  }
}

/** authorization.k8s.io/v1 SubjectAccessReviews. */
export class AuthorizationV1Client {
  constructor(private readonly kube: KubeClient) {}

  createSubjectAccessReview(p: { readonly body: V1SubjectAccessReview }): Promise<V1SubjectAccessReview> {
    return this.kube.create('/apis/authorization.k8s.io/v1/subjectaccessreviews', p.body);
  }
}

/** One cluster-scoped custom resource type. */
export interface ClusterResource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/** Cluster-scoped custom objects, untyped as the server sends them. */
export class CustomObjectsClient {
  constructor(private readonly kube: KubeClient) {}

  /** The collection's path, e.g. for a watch. */
  static path(r: ClusterResource, name?: string): string {
    return `/apis/${s(r.group)}/${s(r.version)}/${s(r.plural)}${name === undefined ? '' : `/${s(name)}`}`;
  }

  getClusterCustomObject(p: ClusterResource & { readonly name: string }): Promise<unknown> {
    return this.kube.get(CustomObjectsClient.path(p, p.name));
  }

  createClusterCustomObject(p: ClusterResource & { readonly body: object }): Promise<unknown> {
    return this.kube.create(CustomObjectsClient.path(p), p.body);
  }

  replaceClusterCustomObjectStatus(p: ClusterResource & { readonly name: string; readonly body: object }): Promise<unknown> {
    return this.kube.replace(`${CustomObjectsClient.path(p, p.name)}/status`, p.body);
  }
}
