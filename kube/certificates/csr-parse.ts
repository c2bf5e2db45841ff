/**
 * Reads a PKCS#10 certificate signing request (RFC 2986) from its PEM text: the subject's common
 * names and organizations, the subjectAltName it asks for (PKCS#9 extensionRequest), and whether
 * its signature verifies against its own public key. Node's crypto verifies signatures but has no
 * CSR parser, so this file carries a minimal DER reader.
 *
 * The reader is strict on purpose: an approver that read a request more leniently than the signer
 * (kube-controller-manager, Go's crypto/x509) could be shown one thing and have another signed.
 * So one PEM block and nothing else, canonical base64, definite minimal DER lengths, no trailing
 * bytes anywhere, and the common name and organizations only in the string types Go reads as
 * strings. Everything else is an {@link InvalidCsrError}; a reader that refuses more than the
 * signer only ever makes the approver deny or skip a request, never approve a wrong one.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

/** The text is not a well-formed PKCS#10 request (or uses something this reader refuses). */
export class InvalidCsrError extends Error {
  override readonly name = 'InvalidCsrError';
}

/** What a request says, as read from its DER. */
export interface ParsedCsr {
  /** Every CN value of the subject, in order (a well-formed node request has exactly one). */
  readonly commonNames: readonly string[];
  /** Every O value of the subject, in order. */
  readonly organizations: readonly string[];
  /** Requested subjectAltName dNSName entries. */
  readonly dnsNames: readonly string[];
  /** Requested subjectAltName iPAddress entries as text ({@link formatIp}). */
  readonly ipAddresses: readonly string[];
  /** Requested subjectAltName rfc822Name entries. */
  readonly emailAddresses: readonly string[];
  /** Requested subjectAltName uniformResourceIdentifier entries. */
  readonly uris: readonly string[];
  /**
   * How many requested subjectAltName entries are of another kind (otherName, directoryName,
   * registeredID, …): Go's signer drops them, but a request carrying them is not a plain node
   * request, and an approver may refuse it.
   */
  readonly otherNames: number;
  /** The signature algorithm's OID, dotted. */
  readonly signatureAlgorithm: string;
  /**
   * The signature verifies with the request's own key under a supported algorithm (ECDSA or RSA
   * PKCS#1 v1.5 with SHA-256/384/512, Ed25519) whose key type matches the key. False for an
   * unknown algorithm: the request proves nothing about who holds the key.
   */
  readonly signatureValid: boolean;
}

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
} as const;

/** Signature algorithms: the hash node's `verify` takes (null: none, Ed25519) and the key type they need. */
const SIGNATURE_ALGORITHMS = new Map<string, { readonly hash: string | null; readonly keyType: string }>([
  ['1.2.840.10045.4.3.2', { hash: 'sha256', keyType: 'ec' }],
  ['1.2.840.10045.4.3.3', { hash: 'sha384', keyType: 'ec' }],
  ['1.2.840.10045.4.3.4', { hash: 'sha512', keyType: 'ec' }],
  ['1.2.840.113549.1.1.11', { hash: 'sha256', keyType: 'rsa' }],
  ['1.2.840.113549.1.1.12', { hash: 'sha384', keyType: 'rsa' }],
  ['1.2.840.113549.1.1.13', { hash: 'sha512', keyType: 'rsa' }],
  ['1.3.101.112', { hash: null, keyType: 'ed25519' }],
]);

const TAG = {
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  sequence: 0x30,
  set: 0x31,
  attributes: 0xa0,
  boolean: 0x01,
} as const;

/** One DER element: its tag and where its header and content are in the buffer. */
interface Element {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
}

/** A DER buffer and the few reads a CSR needs; every read is bounds-checked against its container. */
class Der {
  constructor(readonly bytes: Buffer) {}

  /** The one element `bytes` holds, with nothing after it. */
  root(): Element {
    const top = this.element(0, this.bytes.length);
    if (top.end !== this.bytes.length) throw new InvalidCsrError('trailing bytes after the request');
    return top;
  }

  element(at: number, limit: number): Element {
    if (at + 2 > limit) throw new InvalidCsrError('truncated DER element');
    const tag = this.bytes.readUInt8(at);
    // A CSR uses only low tag numbers; the high-tag form would only widen what must be read.
    if ((tag & 0x1f) === 0x1f) throw new InvalidCsrError('multi-byte DER tags are not supported');
    const first = this.bytes.readUInt8(at + 1);
    if (first < 0x80) return this.bounded({ tag, start: at, contentStart: at + 2, end: at + 2 + first }, limit);
    const count = first & 0x7f;
    if (count === 0) throw new InvalidCsrError('indefinite lengths are not DER');
    if (count > 4 || at + 2 + count > limit) throw new InvalidCsrError('bad DER length');
    let length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + this.bytes.readUInt8(at + 2 + i);
    // DER: the shortest form, so one request has one encoding.
    if (this.bytes.readUInt8(at + 2) === 0 || length < 0x80) throw new InvalidCsrError('non-minimal DER length');
    return this.bounded({ tag, start: at, contentStart: at + 2 + count, end: at + 2 + count + length }, limit);
  }

  private bounded(element: Element, limit: number): Element {
    if (element.end > limit) throw new InvalidCsrError('DER element runs past its container');
    return element;
  }

  /** The elements inside a constructed element, which they must fill exactly. */
  children(parent: Element): Element[] {
    if ((parent.tag & 0x20) === 0) throw new InvalidCsrError('expected a constructed DER element');
    const found: Element[] = [];
    for (let at = parent.contentStart; at < parent.end; ) {
      const child = this.element(at, parent.end);
      found.push(child);
      at = child.end;
    }
    return found;
  }

  content(element: Element): Buffer {
    return this.bytes.subarray(element.contentStart, element.end);
  }

  raw(element: Element): Buffer {
    return this.bytes.subarray(element.start, element.end);
  }
}

function expectTag(element: Element | undefined, tag: number, what: string): Element {
  if (element?.tag !== tag) throw new InvalidCsrError(`${what}: expected DER tag 0x${tag.toString(16)}`);
  return element;
}

/** An OBJECT IDENTIFIER's content as dotted text. */
function decodeOid(content: Buffer): string {
  if (content.length === 0) throw new InvalidCsrError('empty OID');
  const arcs: number[] = [];
  let value = 0;
  for (let i = 0; i < content.length; i += 1) {
    const byte = content.readUInt8(i);
    if (value === 0 && byte === 0x80) throw new InvalidCsrError('non-minimal OID arc');
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER) throw new InvalidCsrError('OID arc too large');
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    } else if (i === content.length - 1) throw new InvalidCsrError('truncated OID');
  }
  const [head = 0, ...rest] = arcs;
  const first = head < 80 ? Math.floor(head / 40) : 2;
  return [first, head - first * 40, ...rest].join('.');
}

const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** A directory string: UTF8String, PrintableString or IA5String (what Go's pkix reads as text). */
function decodeDirectoryString(der: Der, element: Element): string {
  const content = der.content(element);
  switch (element.tag) {
    case 0x0c:
      return utf8(content);
    case 0x13: {
      const text = content.toString('latin1');
      if (!PRINTABLE.test(text)) throw new InvalidCsrError('PrintableString with characters outside its set');
      return text;
    }
    case 0x16:
      return ascii(content);
    default:
      throw new InvalidCsrError(`unsupported string type 0x${element.tag.toString(16)} in the subject`);
  }
}

function utf8(content: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(content);
  } catch (err: unknown) {
    throw new InvalidCsrError('invalid UTF-8 in a string', { cause: err });
  }
}

function ascii(content: Buffer): string {
  if (content.some((byte) => byte >= 0x80)) throw new InvalidCsrError('non-ASCII bytes in an IA5String');
  return content.toString('latin1');
}

/** The CN and O values of a Name (SEQUENCE OF SET OF AttributeTypeAndValue), in order. */
function readSubject(der: Der, subject: Element): { commonNames: string[]; organizations: string[] } {
  const commonNames: string[] = [];
  const organizations: string[] = [];
  for (const rdn of der.children(subject)) {
    for (const atv of der.children(expectTag(rdn, TAG.set, 'subject RDN'))) {
      const [type, value, ...extra] = der.children(expectTag(atv, TAG.sequence, 'subject attribute'));
      if (value === undefined || extra.length > 0) throw new InvalidCsrError('subject attribute is not a type and a value');
      const oid = decodeOid(der.content(expectTag(type, TAG.oid, 'subject attribute type')));
      if (oid === OID.commonName) commonNames.push(decodeDirectoryString(der, value));
      else if (oid === OID.organization) organizations.push(decodeDirectoryString(der, value));
    }
  }
  return { commonNames, organizations };
}

/** What the requested subjectAltName extensions hold, gathered across all of them. */
interface AltNames {
  readonly dnsNames: string[];
  readonly ipAddresses: string[];
  readonly emailAddresses: string[];
  readonly uris: string[];
  otherNames: number;
}

function readGeneralNames(value: Buffer, into: AltNames): void {
  const inner = new Der(value);
  for (const name of inner.children(expectTag(inner.root(), TAG.sequence, 'GeneralNames'))) {
    const content = inner.content(name);
    switch (name.tag) {
      case 0x81:
        into.emailAddresses.push(ascii(content));
        break;
      case 0x82:
        into.dnsNames.push(ascii(content));
        break;
      case 0x86:
        into.uris.push(ascii(content));
        break;
      case 0x87:
        into.ipAddresses.push(formatIp(content));
        break;
      default:
        into.otherNames += 1;
    }
  }
}

/** Extensions ::= SEQUENCE OF Extension; only subjectAltName is read, every one of them (not just the last). */
function readExtensions(der: Der, extensions: Element, into: AltNames): void {
  for (const extension of der.children(expectTag(extensions, TAG.sequence, 'requested extensions'))) {
    const fields = der.children(expectTag(extension, TAG.sequence, 'extension'));
    const [id, second, third, ...extra] = fields;
    const value = third ?? second;
    if (extra.length > 0 || (third !== undefined && second?.tag !== TAG.boolean)) throw new InvalidCsrError('malformed extension');
    const oid = decodeOid(der.content(expectTag(id, TAG.oid, 'extension id')));
    const octets = der.content(expectTag(value, TAG.octetString, 'extension value'));
    if (oid === OID.subjectAltName) readGeneralNames(octets, into);
  }
}

/** The attributes ([0] IMPLICIT SET OF Attribute): the requested extensions, from every extensionRequest. */
function readAttributes(der: Der, attributes: Element): AltNames {
  const names: AltNames = { dnsNames: [], ipAddresses: [], emailAddresses: [], uris: [], otherNames: 0 };
  for (const attribute of der.children(expectTag(attributes, TAG.attributes, 'attributes'))) {
    const [type, values, ...extra] = der.children(expectTag(attribute, TAG.sequence, 'attribute'));
    if (extra.length > 0) throw new InvalidCsrError('malformed attribute');
    const oid = decodeOid(der.content(expectTag(type, TAG.oid, 'attribute type')));
    const valueSet = expectTag(values, TAG.set, 'attribute values');
    if (oid === OID.extensionRequest) for (const extensions of der.children(valueSet)) readExtensions(der, extensions, names);
  }
  return names;
}

/** One PEM block labelled CERTIFICATE REQUEST and nothing else around it, as DER. */
function pemToDer(pem: string): Buffer {
  const match = /^-----BEGIN CERTIFICATE REQUEST-----\r?\n([A-Za-z0-9+/=\s]*)-----END CERTIFICATE REQUEST-----$/.exec(pem.trim());
  if (match === null) throw new InvalidCsrError('not a single PEM block labelled CERTIFICATE REQUEST');
  const body = (match[1] ?? '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) throw new InvalidCsrError('the PEM body is not base64');
  const der = Buffer.from(body, 'base64');
  // Buffer's decoder forgives; a body that does not encode back is not canonical base64.
  if (der.toString('base64') !== body) throw new InvalidCsrError('the PEM body is not canonical base64');
  return der;
}

function readPublicKey(der: Der, spki: Element): KeyObject {
  try {
    return createPublicKey({ key: der.raw(spki), format: 'der', type: 'spki' });
  } catch (err: unknown) {
    throw new InvalidCsrError('the request\'s public key cannot be read', { cause: err });
  }
}

/** Whether `signature` over `signed` verifies with `key` under the algorithm `oid` names. */
function verifies(options: { readonly oid: string; readonly key: KeyObject; readonly signed: Buffer; readonly signature: Buffer }): boolean {
  const algorithm = SIGNATURE_ALGORITHMS.get(options.oid);
  // The key must be of the algorithm's kind: node would verify an RSA signature under an ECDSA OID.
  if (algorithm === undefined || algorithm.keyType !== options.key.asymmetricKeyType) return false;
  try {
    return verify(algorithm.hash, options.signed, options.key, options.signature);
  } catch {
    // A signature node cannot even decode (a malformed ECDSA sequence) does not verify.
    return false;
  }
}

function readSignature(der: Der, bits: Element | undefined): Buffer {
  const content = der.content(expectTag(bits, TAG.bitString, 'signature'));
  if (content.length < 1 || content.readUInt8(0) !== 0) throw new InvalidCsrError('signature bit string has unused bits');
  return content.subarray(1);
}

function parseDer(der: Der): ParsedCsr {
  const [info, algorithm, bits, ...extra] = der.children(expectTag(der.root(), TAG.sequence, 'CertificationRequest'));
  if (extra.length > 0) throw new InvalidCsrError('CertificationRequest has extra fields');
  const infoElement = expectTag(info, TAG.sequence, 'CertificationRequestInfo');
  const [version, subject, spki, attributes, ...more] = der.children(infoElement);
  if (more.length > 0) throw new InvalidCsrError('CertificationRequestInfo has extra fields');
  const versionBytes = der.content(expectTag(version, TAG.integer, 'version'));
  if (versionBytes.length !== 1 || versionBytes.readUInt8(0) !== 0) throw new InvalidCsrError('unsupported request version');
  const names = readSubject(der, expectTag(subject, TAG.sequence, 'subject'));
  const key = readPublicKey(der, expectTag(spki, TAG.sequence, 'subjectPublicKeyInfo'));
  const altNames = readAttributes(der, expectTag(attributes, TAG.attributes, 'attributes'));
  const [algorithmId] = der.children(expectTag(algorithm, TAG.sequence, 'signatureAlgorithm'));
  const oid = decodeOid(der.content(expectTag(algorithmId, TAG.oid, 'signature algorithm id')));
  const signature = readSignature(der, bits);
  const signatureValid = verifies({ oid, key, signed: der.raw(infoElement), signature });
  return { ...names, ...altNames, signatureAlgorithm: oid, signatureValid };
}

/**
 * Parses a PEM-encoded PKCS#10 request.
 * @throws InvalidCsrError when it is not one, or uses an encoding this reader refuses.
 */
export function parseCsrPem(pem: string): ParsedCsr {
  const der = new Der(pemToDer(pem));
  try {
    return parseDer(der);
  } catch (err: unknown) {
    // The reads are bounds-checked; a RangeError would be a gap in those checks, still bad input.
    if (err instanceof RangeError) throw new InvalidCsrError('truncated request', { cause: err });
    throw err;
  }
}

/** Text of IPv4 (4 bytes) and IPv6 (16 bytes) addresses, as Go prints them: an IPv4-mapped IPv6 address as IPv4. */
export function formatIp(bytes: Buffer): string {
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.length !== 16) throw new InvalidCsrError(`an IP address of ${bytes.length} bytes`);
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes.readUInt16BE(10) === 0xffff) return [...bytes.subarray(12)].join('.');
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  const run = longestZeroRun(groups);
  const hex = (list: number[]): string => list.map((g) => g.toString(16)).join(':');
  if (run === undefined) return hex(groups);
  return `${hex(groups.slice(0, run.start))}::${hex(groups.slice(run.start + run.length))}`;
}

/** RFC 5952: the longest run of two or more zero groups, the first of equal ones. */
function longestZeroRun(groups: readonly number[]): { start: number; length: number } | undefined {
  let best: { start: number; length: number } | undefined;
  for (let i = 0; i < groups.length; ) {
    let j = i;
    while (j < groups.length && groups[j] === 0) j += 1;
    if (j - i >= 2 && j - i > (best?.length ?? 0)) best = { start: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  return best;
}

/**
 * An IP address's text in the form {@link formatIp} gives, so that addresses from a Node's
 * status compare with a request's by value (`fd00:0::1` is `fd00::1`); undefined when `text` is
 * not an IP address (zone indices included: a certificate cannot name one).
 */
export function canonicalIp(text: string): string | undefined {
  const kind = isIP(text);
  if (kind === 4) return formatIp(Buffer.from(text.split('.').map(Number)));
  if (kind !== 6 || text.includes('%')) return undefined;
  return formatIp(ipv6Bytes(text));
}

function ipv6Bytes(text: string): Buffer {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  // A trailing dotted quad is the last two groups.
  const hexText = dotted?.[1] === undefined ? text : text.slice(0, -dotted[1].length) + ipv4Groups(dotted[1]);
  const [head = '', tail] = hexText.split('::');
  const split = (part: string): string[] => part.split(':').filter((g) => g !== '');
  const front = split(head);
  const back = tail === undefined ? [] : split(tail);
  const groups = [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

function ipv4Groups(dotted: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}
