/**
 * The node server's serving certificate: the files given (`--tls-cert-file`/`--tls-private-key-file`),
 * else a self-signed one for the node's name and InternalIP, made once and kept under the agent's
 * root (as the kubelet keeps `<root>/pki/kubelet.crt`), so a restarted agent serves the same
 * certificate a client may have pinned. A kept certificate that no longer names the node's
 * addresses, or has expired, is replaced.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { makeCertificate } from '../kube/certificates/x509.js';

/** What the server presents, PEM-encoded. */
export interface ServingCredentials {
  readonly certPem: string;
  readonly keyPem: string;
  /** Where they came from, for the startup log. */
  readonly source: 'files' | 'self-signed (new)' | 'self-signed (kept)';
}

/** Where the serving certificate comes from. */
export interface ServingCertificateOptions {
  readonly certFile?: string;
  readonly keyFile?: string;
  /** The self-signed certificate's directory (`<root-dir>/pki`). */
  readonly pkiDir: string;
  readonly nodeName: string;
  readonly nodeIp: string;
  /** Milliseconds since the epoch. */
  readonly now: number;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;
export const SELF_SIGNED_CERT = 'nodelet-server.crt';
export const SELF_SIGNED_KEY = 'nodelet-server.key';

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** True when the kept certificate still names the node and has not expired. */
function stillFits(certPem: string, options: ServingCertificateOptions): boolean {
  const cert = new X509Certificate(certPem);
  const names = cert.subjectAltName ?? '';
  return Date.parse(cert.validTo) > options.now && cert.checkIP(options.nodeIp) !== undefined && names.includes(`DNS:${options.nodeName}`);
}

async function writeAtomically(file: string, content: string): Promise<void> {
  await writeFile(`${file}.tmp`, content, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

async function selfSigned(options: ServingCertificateOptions): Promise<ServingCredentials> {
  const certFile = path.join(options.pkiDir, SELF_SIGNED_CERT);
  const keyFile = path.join(options.pkiDir, SELF_SIGNED_KEY);
  const [certPem, keyPem] = await Promise.all([readIfPresent(certFile), readIfPresent(keyFile)]);
  if (certPem !== undefined && keyPem !== undefined && stillFits(certPem, options)) return { certPem, keyPem, source: 'self-signed (kept)' };
  // Like the kubelet's: valid a year, for the node's addresses; a CA of itself so a client can trust it directly.
  const made = makeCertificate({
    subject: { commonName: `${options.nodeName}@${Math.floor(options.now / 1000)}` },
    altNames: [options.nodeIp, options.nodeName],
    usages: ['serverAuth'],
    isCa: true,
    notBefore: new Date(options.now - 60_000),
    notAfter: new Date(options.now + YEAR_MS),
  });
  await mkdir(options.pkiDir, { recursive: true, mode: 0o700 });
  await writeAtomically(keyFile, made.keyPem);
  await writeAtomically(certFile, made.certPem);
  return { ...made, source: 'self-signed (new)' };
}

/** The serving certificate and key; see this file's header. */
export async function servingCredentials(options: ServingCertificateOptions): Promise<ServingCredentials> {
  if (options.certFile !== undefined && options.keyFile !== undefined) {
    const [certPem, keyPem] = await Promise.all([readFile(options.certFile, 'utf8'), readFile(options.keyFile, 'utf8')]);
    return { certPem, keyPem, source: 'files' };
  }
  return selfSigned(options);
}
