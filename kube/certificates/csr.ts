/**
 * A PKCS#10 certificate signing request (RFC 2986) for a new ECDSA P-256 key, built with the DER
 * helpers of x509.ts (node's crypto signs but cannot make a CSR). Holds what the kubelet's serving
 * CSR holds: the subject and, as a requested extension, the subjectAltName; the usages travel in
 * the CertificateSigningRequest object, not in the PEM.
 */
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { ECDSA_WITH_SHA256, bitString, extension, name, oid, pem, seq, set, subjectAltNames, tlv, type CertificateSubject } from './x509.js';

/** What a request asks for. */
export interface CsrSpec {
  readonly subject: CertificateSubject;
  /** IP addresses and DNS names (subjectAltName). */
  readonly altNames: readonly string[];
}

/** A request and the private key it was made for, PEM-encoded. */
export interface CsrAndKey {
  readonly csrPem: string;
  readonly keyPem: string;
}

/** PKCS#9 extensionRequest: the extensions the signer is asked to put in the certificate. */
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SUBJECT_ALT_NAME = '2.5.29.17';

/** A new key and a signed request for it. */
export function makeCsr(spec: CsrSpec): CsrAndKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const requested = spec.altNames.length === 0 ? [] : [seq(oid(EXTENSION_REQUEST), set(seq(extension(SUBJECT_ALT_NAME, false, subjectAltNames(spec.altNames)))))];
  // version 0, subject, key, attributes [0] IMPLICIT SET OF Attribute.
  const info = seq(tlv(0x02, Buffer.from([0])), name(spec.subject), spki, tlv(0xa0, Buffer.concat(requested)));
  const der = seq(info, ECDSA_WITH_SHA256, bitString(sign('sha256', info, privateKey)));
  return { csrPem: pem('CERTIFICATE REQUEST', der), keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
