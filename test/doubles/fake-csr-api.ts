/**
 * A certificates.k8s.io stand-in for the serving-certificate manager's tests: it keeps the requests
 * it is sent, and when the test approves one it signs it with a test CA through `openssl x509 -req`
 * (an independent signer: the manager's CSR encoding must be right for it to work), copying the
 * requested SANs, for `days` days from the real now.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CsrClient, CsrRequest, CsrState } from '../../kube/certificates/certificate-manager.js';
import type { CertificateAndKey } from '../../kube/certificates/x509.js';

interface Stored {
  readonly request: CsrRequest;
  state: CsrState;
}

/** The fake API and the test's hands on it. */
export interface FakeCsrApi extends CsrClient {
  /** Every request created, in order, with its name. */
  readonly requests: { readonly name: string; readonly request: CsrRequest }[];
  /** Signs a request with the CA, valid `days` days (the signer's answer after approval). */
  approve(name: string, days: number): void;
  deny(name: string): void;
  /** Makes the next `count` create calls fail. */
  failCreates(count: number): void;
}

/** A fake API signing with `ca`. */
export function createFakeCsrApi(ca: CertificateAndKey): FakeCsrApi {
  const store = new Map<string, Stored>();
  const requests: { name: string; request: CsrRequest }[] = [];
  let failing = 0;
  const stateOf = (name: string): Stored => {
    const found = store.get(name);
    if (found === undefined) throw new Error(`no such CSR ${name}`);
    return found;
  };
  return {
    requests,
    create: (request) => {
      if (failing > 0) {
        failing -= 1;
        return Promise.reject(new Error('injected create failure'));
      }
      const name = `csr-${requests.length + 1}`;
      requests.push({ name, request });
      store.set(name, { request, state: { phase: 'pending' } });
      return Promise.resolve(name);
    },
    get: (name) => Promise.resolve(stateOf(name).state),
    approve(name, days) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-csr-'));
      try {
        const files = { csr: path.join(dir, 'req.csr'), ca: path.join(dir, 'ca.crt'), key: path.join(dir, 'ca.key') };
        writeFileSync(files.csr, stateOf(name).request.csrPem);
        writeFileSync(files.ca, ca.certPem);
        writeFileSync(files.key, ca.keyPem);
        const certPem = execFileSync('openssl', ['x509', '-req', '-in', files.csr, '-CA', files.ca, '-CAkey', files.key, '-CAcreateserial', '-days', String(days), '-copy_extensions', 'copy'], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
        stateOf(name).state = { phase: 'issued', certPem };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    deny(name) {
      stateOf(name).state = { phase: 'denied', reason: 'test denied it' };
    },
    failCreates(count) {
      failing = count;
    },
  };
}
