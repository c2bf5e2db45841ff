/**
 * Makes X.509 certificates with node's crypto alone (node has no certificate builder, and the
 * agent's image need not ship openssl): a minimal DER encoder for exactly the structures of an
 * ECDSA P-256 certificate, signed with SHA-256. Used for the node server's self-signed serving
 * certificate (as the kubelet makes one when given no --tls-cert-file) and by tests that need a CA
 * and client certificates.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

export const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const utf8 = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
export const octets = (content: Buffer): Buffer => tlv(0x04, content);
export const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), content]));
const boolTrue = (): Buffer => tlv(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from big-endian bytes (a leading zero keeps it positive). */
function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start += 1;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, (trimmed[0] ?? 0) >= 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups: number[] = [];
    for (let value = arc; ; value = Math.floor(value / 128)) {
      groups.unshift(value % 128);
      if (value < 128) break;
    }
    bytes.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** GeneralizedTime, valid for every year (UTCTime stops at 2049). */
function time(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z');
  return tlv(0x18, Buffer.from(text, 'ascii'));
}

/** A distinguished name: organizations first, then the common name, as openssl's `/O=…/CN=…`. */
export function name(subject: CertificateSubject): Buffer {
  const rdns = (subject.organizations ?? []).map((o) => set(seq(oid('2.5.4.10'), utf8(o))));
  rdns.push(set(seq(oid('2.5.4.3'), utf8(subject.commonName))));
  return seq(...rdns);
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const halves = ip.split('::');
  const head = (halves[0] ?? '').split(':').filter((g) => g !== '');
  const tail = halves.length > 1 ? (halves[1] ?? '').split(':').filter((g) => g !== '') : [];
  const groups = [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

export function subjectAltNames(names: readonly string[]): Buffer {
  // [7] iPAddress, [2] dNSName (context-specific, primitive).
  return seq(...names.map((n) => (isIP(n) === 0 ? tlv(0x82, Buffer.from(n, 'ascii')) : tlv(0x87, ipBytes(n)))));
}

export function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), boolTrue(), octets(value)) : seq(oid(id), octets(value));
}

const EKU = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' } as const;

function extensions(spec: CertificateSpec): Buffer {
  const isCa = spec.isCa ?? false;
  // keyUsage bits (an ECDSA key signs, it does not encipher): digitalSignature (0x80), and
  // keyCertSign (0x04) for a CA; the leading byte counts the unused trailing bits.
  const usage = isCa ? Buffer.from([2, 0x84]) : Buffer.from([7, 0x80]);
  const list = [extension('2.5.29.19', true, isCa ? seq(boolTrue()) : seq()), extension('2.5.29.15', true, tlv(0x03, usage))];
  if ((spec.usages ?? []).length > 0) list.push(extension('2.5.29.37', false, seq(...(spec.usages ?? []).map((u) => oid(EKU[u])))));
  if ((spec.altNames ?? []).length > 0) list.push(extension('2.5.29.17', false, subjectAltNames(spec.altNames ?? [])));
  return tlv(0xa3, seq(...list));
}

/** Who a certificate names. */
export interface CertificateSubject {
  readonly commonName: string;
  /** `O=` entries: the groups of a client certificate. */
  readonly organizations?: readonly string[];
}

/** What to put in a certificate. */
export interface CertificateSpec {
  readonly subject: CertificateSubject;
  /** IP addresses and DNS names (subjectAltName). */
  readonly altNames?: readonly string[];
  readonly usages?: readonly (keyof typeof EKU)[];
  /** A CA may sign others (basicConstraints CA:TRUE, keyCertSign). */
  readonly isCa?: boolean;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** Signs the certificate; absent: self-signed by the new key. */
  readonly issuer?: { readonly certPem: string; readonly keyPem: string };
}

/** A certificate and its private key, PEM-encoded. */
export interface CertificateAndKey {
  readonly certPem: string;
  readonly keyPem: string;
}

export const ECDSA_WITH_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function issuerOf(spec: CertificateSpec, key: KeyObject): { name: Buffer; key: KeyObject } {
  if (spec.issuer === undefined) return { name: name(spec.subject), key };
  const issuerCert = new X509Certificate(spec.issuer.certPem);
  // The issuer's subject exactly as its certificate encodes it.
  return { name: subjectDer(issuerCert.raw), key: createPrivateKey(spec.issuer.keyPem) };
}

/** The subject Name's DER, cut from a certificate's DER (tbs: version, serial, alg, issuer, validity, subject). */
function subjectDer(certDer: Buffer): Buffer {
  const elements = (buf: Buffer, offset: number, end: number): { start: number; end: number; contentStart: number }[] => {
    const found: { start: number; end: number; contentStart: number }[] = [];
    for (let at = offset; at < end; ) {
      const first = buf[at + 1] ?? 0;
      const lengthBytes = first < 0x80 ? 0 : first & 0x7f;
      let length = first < 0x80 ? first : 0;
      for (let i = 0; i < lengthBytes; i += 1) length = length * 256 + (buf[at + 2 + i] ?? 0);
      const contentStart = at + 2 + lengthBytes;
      found.push({ start: at, end: contentStart + length, contentStart });
      at = contentStart + length;
    }
    return found;
  };
  const [cert] = elements(certDer, 0, certDer.length);
  const [tbs] = elements(certDer, cert?.contentStart ?? 0, cert?.end ?? 0);
  const fields = elements(certDer, tbs?.contentStart ?? 0, tbs?.end ?? 0);
  const subject = fields[5];
  if (subject === undefined) throw new Error('malformed issuer certificate');
  return certDer.subarray(subject.start, subject.end);
}

/** DER wrapped as PEM with the given label. */
export function pem(label: string, der: Buffer): string {
  return `-----BEGIN ${label}-----\n${der.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

/** A new ECDSA P-256 key and a certificate for it. */
export function makeCertificate(spec: CertificateSpec): CertificateAndKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const issuer = issuerOf(spec, privateKey);
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    unsignedInteger(Buffer.concat([Buffer.from([0x01]), randomBytes(15)])),
    ECDSA_WITH_SHA256,
    issuer.name,
    seq(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subject),
    spki,
    extensions(spec),
  );
  const signature = sign('sha256', tbs, issuer.key);
  const der = seq(tbs, ECDSA_WITH_SHA256, bitString(signature));
  const certPem = pem('CERTIFICATE', der);
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return { certPem, keyPem };
}
