import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { makeCsr } from './csr.js';

/**
 * openssl's reading of a request: it checks the self-signature and prints the fields. openssl 3.0
 * exits 0 even when the signature fails, so its verdict is read from stderr.
 */
function opensslReads(csrPem: string): { verified: boolean; text: string } {
  const run = spawnSync('openssl', ['req', '-verify', '-noout', '-text'], { input: csrPem, encoding: 'utf8' });
  return { verified: run.status === 0 && run.stderr.includes('self-signature verify OK'), text: run.stdout };
}

describe('makeCsr', () => {
  it("makes a request openssl verifies, naming the node as the kubelet's serving CSR does", () => {
    const made = makeCsr({ subject: { commonName: 'system:node:node-a', organizations: ['system:nodes'] }, altNames: ['10.0.0.7', 'node-a', 'fd00::1'] });
    const { verified, text } = opensslReads(made.csrPem);
    assert.equal(verified, true);
    assert.match(text, /Subject: O ?= ?system:nodes, CN ?= ?system:node:node-a/);
    assert.match(text, /Public Key Algorithm: id-ecPublicKey/);
    assert.match(text, /NIST CURVE: P-256/);
    assert.match(text, /Requested Extensions:\s+X509v3 Subject Alternative Name:\s+IP Address:10\.0\.0\.7, DNS:node-a, IP Address:FD00:0:0:0:0:0:0:1/);
    assert.match(text, /Signature Algorithm: ecdsa-with-SHA256/);
    // The key handed back is the one the request carries.
    const requestKey = execFileSync('openssl', ['req', '-noout', '-pubkey'], { input: made.csrPem, encoding: 'utf8' });
    assert.equal(requestKey, createPublicKey(createPrivateKey(made.keyPem)).export({ type: 'spki', format: 'pem' }).toString());
  });

  it('a request whose bytes were altered after signing fails openssl verification', () => {
    const made = makeCsr({ subject: { commonName: 'system:node:node-a', organizations: ['system:nodes'] }, altNames: ['10.0.0.7'] });
    const der = Buffer.from(made.csrPem.replace(/-----[^-]+-----|\n/g, ''), 'base64');
    // Change one letter of the common name: the signature no longer matches.
    const at = der.indexOf(Buffer.from('node-a'));
    der[at] = 'm'.charCodeAt(0);
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    assert.equal(opensslReads(tampered).verified, false);
    assert.equal(opensslReads(made.csrPem).verified, true);
  });
});
