import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { makeCsr } from './csr.js';
import { canonicalIp, formatIp, InvalidCsrError, parseCsrPem } from './csr-parse.js';
import { pem } from './x509.js';

const run = promisify(execFile);

/** The DER of a PEM request. */
function derOf(text: string): Buffer {
  return Buffer.from(text.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

function rewrap(der: Buffer): string {
  return pem('CERTIFICATE REQUEST', der);
}

describe('parseCsrPem on requests made by makeCsr', () => {
  it('reads the subject, the requested names and a valid ECDSA signature', () => {
    const { csrPem } = makeCsr({ subject: { commonName: 'system:node:h1-nodelet', organizations: ['system:nodes'] }, altNames: ['h1', '10.0.0.1', 'fd00::1'] });
    const parsed = parseCsrPem(csrPem);
    assert.deepEqual(parsed.commonNames, ['system:node:h1-nodelet']);
    assert.deepEqual(parsed.organizations, ['system:nodes']);
    assert.deepEqual(parsed.dnsNames, ['h1']);
    assert.deepEqual(parsed.ipAddresses, ['10.0.0.1', 'fd00::1']);
    assert.deepEqual(parsed.emailAddresses, []);
    assert.deepEqual(parsed.uris, []);
    assert.equal(parsed.otherNames, 0);
    assert.equal(parsed.signatureAlgorithm, '1.2.840.10045.4.3.2');
    assert.equal(parsed.signatureValid, true);
  });

  it('reads a request without names or organizations', () => {
    const parsed = parseCsrPem(makeCsr({ subject: { commonName: 'system:node:h1' }, altNames: [] }).csrPem);
    assert.deepEqual(parsed.commonNames, ['system:node:h1']);
    assert.deepEqual(parsed.organizations, []);
    assert.deepEqual([...parsed.dnsNames, ...parsed.ipAddresses], []);
    assert.equal(parsed.signatureValid, true);
  });
});

describe('parseCsrPem on requests made by openssl req -new', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'csr-parse-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function openssl(options: { readonly newkey: readonly string[]; readonly subj: string; readonly extra?: readonly string[] }): Promise<string> {
    const keyout = path.join(dir, `key-${Math.random().toString(36).slice(2)}.pem`);
    const args = ['req', '-new', ...options.newkey, '-nodes', '-keyout', keyout, '-subj', options.subj, ...(options.extra ?? [])];
    const { stdout } = await run('openssl', args, { timeout: 60_000 });
    return stdout;
  }

  const SAN = ['-addext', 'subjectAltName=DNS:a,IP:10.0.0.1,IP:::1,email:x@y,URI:spiffe://x'];

  it('reads an RSA request with every kind of name', async () => {
    const csrPem = await openssl({ newkey: ['-newkey', 'rsa:2048'], subj: '/O=system:nodes/CN=system:node:h1-nodelet', extra: SAN });
    const parsed = parseCsrPem(csrPem);
    assert.deepEqual(parsed.commonNames, ['system:node:h1-nodelet']);
    assert.deepEqual(parsed.organizations, ['system:nodes']);
    assert.deepEqual(parsed.dnsNames, ['a']);
    assert.deepEqual(parsed.ipAddresses, ['10.0.0.1', '::1']);
    assert.deepEqual(parsed.emailAddresses, ['x@y']);
    assert.deepEqual(parsed.uris, ['spiffe://x']);
    assert.equal(parsed.signatureAlgorithm, '1.2.840.113549.1.1.11');
    assert.equal(parsed.signatureValid, true);
  });

  it('reads an EC request with every kind of name', async () => {
    const csrPem = await openssl({ newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'], subj: '/O=system:nodes/CN=system:node:h1', extra: SAN });
    const parsed = parseCsrPem(csrPem);
    assert.deepEqual(parsed.commonNames, ['system:node:h1']);
    assert.deepEqual(parsed.dnsNames, ['a']);
    assert.deepEqual(parsed.ipAddresses, ['10.0.0.1', '::1']);
    assert.deepEqual(parsed.emailAddresses, ['x@y']);
    assert.deepEqual(parsed.uris, ['spiffe://x']);
    assert.equal(parsed.signatureAlgorithm, '1.2.840.10045.4.3.2');
    assert.equal(parsed.signatureValid, true);
  });

  it('verifies SHA-384 and SHA-512 signatures, and Ed25519', async () => {
    const ec384 = parseCsrPem(await openssl({ newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp384r1'], subj: '/CN=x', extra: ['-sha384'] }));
    assert.equal(ec384.signatureAlgorithm, '1.2.840.10045.4.3.3');
    assert.equal(ec384.signatureValid, true);
    const rsa512 = parseCsrPem(await openssl({ newkey: ['-newkey', 'rsa:2048'], subj: '/CN=x', extra: ['-sha512'] }));
    assert.equal(rsa512.signatureAlgorithm, '1.2.840.113549.1.1.13');
    assert.equal(rsa512.signatureValid, true);
    const ed = parseCsrPem(await openssl({ newkey: ['-newkey', 'ed25519'], subj: '/CN=x' }));
    assert.equal(ed.signatureAlgorithm, '1.3.101.112');
    assert.equal(ed.signatureValid, true);
  });

  it('keeps every CN and every O, in order, also from one multi-valued RDN', async () => {
    const parsed = parseCsrPem(await openssl({ newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'], subj: '/O=b/O=a/CN=one/CN=two+O=c', extra: ['-multivalue-rdn'] }));
    assert.deepEqual(parsed.commonNames, ['one', 'two']);
    assert.deepEqual(parsed.organizations, ['b', 'a', 'c']);
  });

  it('counts subjectAltName entries of other kinds instead of dropping them silently', async () => {
    const parsed = parseCsrPem(await openssl({ newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'], subj: '/CN=x', extra: ['-addext', 'subjectAltName=DNS:a,RID:1.2.3.4,dirName:dir_sect', '-config', await configWithDirSection()] }));
    assert.deepEqual(parsed.dnsNames, ['a']);
    assert.equal(parsed.otherNames, 2);
  });

  async function configWithDirSection(): Promise<string> {
    const file = path.join(dir, 'openssl.cnf');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, '[req]\ndistinguished_name = dn\n[dn]\n[dir_sect]\nCN = other\n');
    return file;
  }

  it('reads the subjectAltName among other requested extensions', async () => {
    const csrPem = await openssl({ newkey: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'], subj: '/CN=x', extra: ['-addext', 'subjectAltName=DNS:a', '-addext', 'keyUsage=digitalSignature'] });
    assert.deepEqual(parseCsrPem(csrPem).dnsNames, ['a']);
  });
});

describe('parseCsrPem on tampered requests', () => {
  const { csrPem } = makeCsr({ subject: { commonName: 'system:node:h1-nodelet', organizations: ['system:nodes'] }, altNames: ['10.0.0.1'] });

  it('reports an invalid signature when a byte of the signed part changed', () => {
    const der = derOf(csrPem);
    const at = der.indexOf(Buffer.from('system:node:h1-nodelet')) + 'system:node:h'.length;
    der.writeUInt8(der.readUInt8(at) ^ 0x01, at);
    const parsed = parseCsrPem(rewrap(der));
    assert.deepEqual(parsed.commonNames, ['system:node:h0-nodelet']);
    assert.equal(parsed.signatureValid, false);
  });

  it('reports an invalid signature when the signature changed', () => {
    const der = derOf(csrPem);
    // The last byte is the ECDSA s value's last byte.
    der.writeUInt8(der.readUInt8(der.length - 1) ^ 0x01, der.length - 1);
    assert.equal(parseCsrPem(rewrap(der)).signatureValid, false);
  });

  it('reports an invalid signature for an algorithm it does not know, or one that does not fit the key', () => {
    const der = derOf(csrPem);
    const ecdsaSha256 = Buffer.from('06082a8648ce3d040302', 'hex');
    const at = der.lastIndexOf(ecdsaSha256);
    const sha224 = Buffer.from(der);
    sha224.writeUInt8(0x01, at + ecdsaSha256.length - 1);
    const unknown = parseCsrPem(rewrap(sha224));
    assert.equal(unknown.signatureAlgorithm, '1.2.840.10045.4.3.1');
    assert.equal(unknown.signatureValid, false);
    // sha256WithRSAEncryption has an OID of another length: swap the whole AlgorithmIdentifier.
    const rsaAlg = Buffer.from('300d06092a864886f70d01010b0500', 'hex');
    const ecAlg = Buffer.concat([Buffer.from([0x30, ecdsaSha256.length]), ecdsaSha256]);
    const algAt = der.lastIndexOf(ecAlg);
    const body = Buffer.concat([der.subarray(4, algAt), rsaAlg, der.subarray(algAt + ecAlg.length)]);
    const swapped = Buffer.concat([Buffer.from([0x30, 0x82, body.length >> 8, body.length & 0xff]), body]);
    assert.equal(der.readUInt8(1), 0x82, 'the fixture has a two-byte length');
    assert.equal(parseCsrPem(rewrap(swapped)).signatureValid, false);
  });

  it('never throws anything but InvalidCsrError for a truncated or bit-flipped request', () => {
    const der = derOf(csrPem);
    for (let length = 0; length < der.length; length += 1) {
      assert.throws(() => parseCsrPem(rewrap(der.subarray(0, length))), InvalidCsrError, `truncated at ${length}`);
    }
    for (let at = 0; at < der.length; at += 1) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const flipped = Buffer.from(der);
        flipped.writeUInt8(flipped.readUInt8(at) ^ mask, at);
        try {
          const parsed = parseCsrPem(rewrap(flipped));
          // Flips in the signed part or the signature must not leave a valid signature.
          assert.equal(parsed.signatureValid, false, `byte ${at} ^ ${mask} still verifies`);
        } catch (err: unknown) {
          assert.ok(err instanceof InvalidCsrError, `byte ${at} ^ ${mask}: ${String(err)}`);
        }
      }
    }
  });
});

describe('parseCsrPem on garbage', () => {
  const { csrPem } = makeCsr({ subject: { commonName: 'system:node:h1' }, altNames: [] });
  const der = derOf(csrPem);
  const cases: Record<string, string> = {
    empty: '',
    'plain text': 'hello world',
    'a certificate label': csrPem.replaceAll('CERTIFICATE REQUEST', 'CERTIFICATE'),
    'two blocks': csrPem + csrPem,
    'text before the block': `junk\n${csrPem}`,
    'PEM headers': csrPem.replace('-----\n', '-----\nProc-Type: 4,ENCRYPTED\n\n'),
    'non-canonical base64': '-----BEGIN CERTIFICATE REQUEST-----\nMAB=\n-----END CERTIFICATE REQUEST-----\n',
    'trailing bytes': rewrap(Buffer.concat([der, Buffer.from([0, 0])])),
    'base64 of nonsense': rewrap(Buffer.from('not DER at all')),
    'an indefinite length': rewrap(Buffer.concat([Buffer.from([0x30, 0x80]), der.subarray(4), Buffer.from([0, 0])])),
    'a non-minimal length': rewrap(Buffer.concat([Buffer.from([0x30, 0x83, 0x00]), der.subarray(2)])),
  };
  for (const [name, text] of Object.entries(cases)) {
    it(`refuses ${name} with InvalidCsrError`, () => {
      assert.throws(() => parseCsrPem(text), InvalidCsrError);
    });
  }

  it('refuses a subject string type Go would not read as text', () => {
    const utf8Cn = Buffer.concat([Buffer.from([0x0c, 'system:node:h1'.length]), Buffer.from('system:node:h1')]);
    const octetCn = Buffer.from(utf8Cn);
    octetCn.writeUInt8(0x04, 0);
    const at = der.indexOf(utf8Cn);
    assert.ok(at > 0);
    const changed = Buffer.concat([der.subarray(0, at), octetCn, der.subarray(at + utf8Cn.length)]);
    assert.throws(() => parseCsrPem(rewrap(changed)), InvalidCsrError);
  });
});

describe('IP address text', () => {
  it('prints IPv4, IPv6 in RFC 5952 form, and IPv4-mapped IPv6 as IPv4', () => {
    assert.equal(formatIp(Buffer.from([10, 0, 0, 1])), '10.0.0.1');
    assert.equal(formatIp(Buffer.from('00000000000000000000000000000001', 'hex')), '::1');
    assert.equal(formatIp(Buffer.from('20010db8000000010000000000000001', 'hex')), '2001:db8:0:1::1');
    assert.equal(formatIp(Buffer.from('20010db8000000000001000000000001', 'hex')), '2001:db8::1:0:0:1');
    assert.equal(formatIp(Buffer.from('20010db8000100010001000100010001', 'hex')), '2001:db8:1:1:1:1:1:1');
    assert.equal(formatIp(Buffer.from('00000000000000000000ffff0a000001', 'hex')), '10.0.0.1');
    assert.throws(() => formatIp(Buffer.from([1, 2, 3])), InvalidCsrError);
  });

  it('canonicalizes address text so equal addresses compare equal', () => {
    assert.equal(canonicalIp('10.0.0.1'), '10.0.0.1');
    assert.equal(canonicalIp('FD00:0:0::1'), 'fd00::1');
    assert.equal(canonicalIp('::ffff:10.0.0.1'), '10.0.0.1');
    assert.equal(canonicalIp('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(canonicalIp('::'), '::');
    assert.equal(canonicalIp('fe80::1%eth0'), undefined);
    assert.equal(canonicalIp('h1'), undefined);
    assert.equal(canonicalIp(''), undefined);
  });
});
