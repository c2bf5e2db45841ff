/**
 * The node server's certificate requested through the CertificateSigningRequest API, as the
 * kubelet's `serverTLSBootstrap` / `--rotate-server-certificates`: a CSR for signer
 * `kubernetes.io/kubelet-serving` naming `system:node:<node>` (group `system:nodes`) with the node's
 * addresses as SANs, made with the node's own credentials, stored as
 * `<root-dir>/pki/nodelet-server-current.pem` and handed to the server, which switches live. How it
 * is requested, stored and rotated is kube/certificates/certificate-manager.ts.
 */
import { CertificateManager, type CertificateManagerOptions, type CertificateTemplate } from '../kube/certificates/certificate-manager.js';
import type { CertificateAndKey } from '../kube/certificates/x509.js';

export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** An ECDSA key signs but does not encipher: the kubelet asks for key encipherment only with RSA. */
export const SERVING_USAGES: readonly string[] = ['digital signature', 'server auth'];
export const CURRENT_PAIR_FILE = 'nodelet-server-current.pem';

/** What the serving manager is built from. */
export interface ServingCertManagerOptions extends Omit<CertificateManagerOptions, 'template' | 'dir'> {
  readonly nodeName: string;
  /** The node's addresses: InternalIP (and any other IPs) and host names, all put in the SANs. */
  readonly addresses: readonly string[];
  /** `<root-dir>/pki`. */
  readonly pkiDir: string;
}

/** The node server's certificate template. */
export function servingTemplate(nodeName: string, addresses: readonly string[]): CertificateTemplate {
  return {
    label: 'serving certificate',
    signerName: SERVING_SIGNER,
    usages: SERVING_USAGES,
    subject: { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
    altNames: addresses,
    fileName: CURRENT_PAIR_FILE,
  };
}

/** See this file's header. */
export class ServingCertManager {
  private readonly manager: CertificateManager;

  constructor(options: ServingCertManagerOptions) {
    const { nodeName, addresses, pkiDir, ...rest } = options;
    this.manager = new CertificateManager({ ...rest, template: servingTemplate(nodeName, addresses), dir: pkiDir });
  }

  /** The pair being served, or undefined until the first certificate is issued. */
  current(): CertificateAndKey | undefined {
    return this.manager.current();
  }

  /** Called with each new pair (the server switches its secure context). */
  onRotate(listener: (pair: CertificateAndKey) => void): void {
    this.manager.onRotate(listener);
  }

  start(): Promise<void> {
    return this.manager.start();
  }

  stop(): void {
    this.manager.stop();
  }
}
