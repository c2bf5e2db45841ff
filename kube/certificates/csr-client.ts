/**
 * A certificate manager's certificates.k8s.io/v1 calls, with the credentials of `kube`.
 * `spec.request` and `status.certificate` are bytes in the API: base64 of the PEM in JSON, and
 * client-node passes such strings through as they are, so the encoding is done here.
 */
import type { V1CertificateSigningRequest } from '@kubernetes/client-node';
import type { KubeClient } from '../client.js';
import { CertificatesV1Client } from '../groups.js';
import type { CsrClient, CsrState } from './certificate-manager.js';

/** The state a CSR object is in. */
export function csrStateOf(csr: V1CertificateSigningRequest): CsrState {
  const conditions = csr.status?.conditions ?? [];
  const refused = conditions.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False');
  if (refused !== undefined) return { phase: refused.type === 'Denied' ? 'denied' : 'failed', reason: refused.message ?? refused.reason ?? '' };
  const encoded = csr.status?.certificate ?? '';
  return encoded === '' ? { phase: 'pending' } : { phase: 'issued', certPem: Buffer.from(encoded, 'base64').toString('utf8') };
}

/**
 * A {@link CsrClient} through `kube`: the API server records whoever `kube` authenticates as in the
 * request (`spec.username`, `spec.groups`, `spec.extra`), which is what an approver checks.
 * `namePrefix` starts the object's generated name (the kubelet's are `csr-<random>`; the purpose
 * and the node's name say whose it is at a glance).
 */
export function apiCsrClient(kube: KubeClient, namePrefix: string): CsrClient {
  const api = new CertificatesV1Client(kube);
  return {
    async create(request) {
      const created = await api.createCertificateSigningRequest({
        body: {
          apiVersion: 'certificates.k8s.io/v1',
          kind: 'CertificateSigningRequest',
          metadata: { generateName: namePrefix },
          spec: { request: Buffer.from(request.csrPem, 'utf8').toString('base64'), signerName: request.signerName, usages: [...request.usages] },
        },
      });
      const name = created.metadata?.name;
      if (name === undefined) throw new Error('the API server returned a CertificateSigningRequest without a name');
      return name;
    },
    async get(name) {
      return csrStateOf(await api.readCertificateSigningRequest({ name }));
    },
  };
}
