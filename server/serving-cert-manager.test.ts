import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock, type FakeClock } from '../test/doubles/fake-clock.js';
import { createFakeCsrApi, type FakeCsrApi } from '../test/doubles/fake-csr-api.js';
import { MAX_TIMER_MS, parsePairFile, rotationDeadline } from '../kube/certificates/certificate-manager.js';
import { CURRENT_PAIR_FILE, SERVING_SIGNER, ServingCertManager } from './serving-cert-manager.js';
import { makeCertificate, type CertificateAndKey } from '../kube/certificates/x509.js';

const DAY_MS = 24 * 3600 * 1000;
const ca = makeCertificate({ subject: { commonName: 'test-ca' }, isCa: true, notBefore: new Date(Date.now() - DAY_MS), notAfter: new Date(Date.now() + 3650 * DAY_MS) });

/** Waits (real time: the manager writes files) until `check` holds; fails after 5 s. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`never: ${what}`);
}

interface Rig {
  readonly manager: ServingCertManager;
  readonly api: FakeCsrApi;
  readonly clock: FakeClock;
  readonly rotated: CertificateAndKey[];
}

function rig(pkiDir: string, options: { api?: FakeCsrApi; clock?: FakeClock; random?: number; addresses?: string[] } = {}): Rig {
  const api = options.api ?? createFakeCsrApi(ca);
  // openssl signs from the real now, so the fake clock starts there.
  const clock = options.clock ?? createFakeClock(Date.now());
  const manager = new ServingCertManager({ nodeName: 'node-a', addresses: options.addresses ?? ['127.0.0.1', 'node-a'], pkiDir, client: api, clock, random: () => options.random ?? 0, logger: pino({ level: 'silent' }), pollMs: 1000, backoff: { initialMs: 2000, maxMs: 60_000 } });
  const rotated: CertificateAndKey[] = [];
  manager.onRotate((pair) => rotated.push(pair));
  return { manager, api, clock, rotated };
}

describe('ServingCertManager', () => {
  const dirs: string[] = [];
  const newDir = async (): Promise<string> => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'serving-cert-'));
    dirs.push(dir);
    return dir;
  };
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('requests a kubelet-serving certificate, serves nothing until it is issued, then stores and hands over the pair', async () => {
    const dir = await newDir();
    const { manager, api, clock, rotated } = rig(dir);
    await manager.start();
    await clock.advance(0);
    await eventually(() => api.requests.length === 1, 'a CSR is created');
    const [sent] = api.requests;
    assert.equal(sent?.request.signerName, SERVING_SIGNER);
    assert.deepEqual(sent?.request.usages, ['digital signature', 'server auth']);
    // Pending: polled, nothing served, no second request.
    await clock.advance(5000);
    assert.equal(manager.current(), undefined);
    assert.equal(api.requests.length, 1);
    // A year, as the kubelet-serving signer issues by default: far past node's longest timer.
    api.approve(sent?.name ?? '', 365);
    await clock.advance(1000);
    await eventually(() => rotated.length === 1, 'the issued pair is handed over');
    const pair = manager.current();
    assert.ok(pair);
    const cert = new X509Certificate(pair.certPem);
    assert.equal(cert.verify(new X509Certificate(ca.certPem).publicKey), true);
    assert.match(cert.subject, /O=system:nodes\nCN=system:node:node-a/);
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.match(cert.subjectAltName ?? '', /DNS:node-a/);
    assert.deepEqual(parsePairFile(await readFile(path.join(dir, CURRENT_PAIR_FILE), 'utf8')), pair);
    // The next rotation: 70% of the lifetime after notBefore with random 0, waited for in steps
    // node's timers can take (a longer delay would fire at once), and not a moment sooner.
    const expected = rotationDeadline(pair.certPem, 0) - clock.now();
    assert.equal(clock.nextTimerIn(), MAX_TIMER_MS);
    await clock.advance(expected - 1);
    assert.equal(api.requests.length, 1);
    await clock.advance(1);
    await eventually(() => api.requests.length === 2, 'a new CSR at the deadline');
    const lifetime = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    assert.equal(rotationDeadline(pair.certPem, 0) - Date.parse(cert.validFrom), lifetime * 0.7);
    assert.equal(rotationDeadline(pair.certPem, 1) - Date.parse(cert.validFrom), lifetime * 0.84);
    manager.stop();
  });

  it('reuses a stored pair that still fits at restart, and rotates it at its deadline', async () => {
    const dir = await newDir();
    const first = rig(dir);
    await first.manager.start();
    await first.clock.advance(0);
    await eventually(() => first.api.requests.length === 1, 'a CSR is created');
    first.api.approve('csr-1', 10);
    await first.clock.advance(1000);
    await eventually(() => first.rotated.length === 1, 'issued');
    first.manager.stop();

    const second = rig(dir, { random: 0.5 });
    await second.manager.start();
    assert.deepEqual(second.manager.current(), first.manager.current());
    await second.clock.advance(0);
    assert.equal(second.api.requests.length, 0);
    const stored = second.manager.current()?.certPem ?? '';
    const untilDeadline = rotationDeadline(stored, 0.5) - second.clock.now();
    await second.clock.advance(untilDeadline - 1);
    assert.equal(second.api.requests.length, 0);
    await second.clock.advance(1);
    await eventually(() => second.api.requests.length === 1, 'a new CSR at the deadline');
    // Until the new one is issued, the old pair is still served.
    assert.deepEqual(second.manager.current()?.certPem, stored);
    second.api.approve('csr-1', 10);
    await second.clock.advance(1000);
    await eventually(() => second.rotated.length === 1, 'rotated');
    assert.notEqual(second.manager.current()?.certPem, stored);
    second.manager.stop();
  });

  it('replaces a stored pair that no longer names the node', async () => {
    const dir = await newDir();
    const other = makeCertificate({ subject: { commonName: 'system:node:node-a', organizations: ['system:nodes'] }, altNames: ['10.9.9.9', 'node-a'], notBefore: new Date(Date.now() - 1000), notAfter: new Date(Date.now() + DAY_MS), issuer: ca });
    await writeFile(path.join(dir, CURRENT_PAIR_FILE), other.certPem + other.keyPem);
    const { manager, api, clock } = rig(dir);
    await manager.start();
    assert.equal(manager.current(), undefined);
    await clock.advance(0);
    await eventually(() => api.requests.length === 1, 'a new CSR');
    manager.stop();
  });

  it('retries with backoff after a failed create and after a denial, with a new request each time', async () => {
    const dir = await newDir();
    const api = createFakeCsrApi(ca);
    api.failCreates(1);
    const { manager, clock, rotated } = rig(dir, { api });
    await manager.start();
    await clock.advance(0);
    await eventually(() => clock.nextTimerIn() === 2000, 'a 2 s backoff after the failed create');
    assert.equal(api.requests.length, 0);
    await clock.advance(2000);
    await eventually(() => api.requests.length === 1, 'the retry creates a CSR');
    api.deny('csr-1');
    await clock.advance(1000);
    // Second failure in a row: 4 s.
    await eventually(() => clock.nextTimerIn() === 4000, 'a 4 s backoff after the denial');
    await clock.advance(4000);
    await eventually(() => api.requests.length === 2, 'a new CSR after the denial');
    api.approve('csr-2', 10);
    await clock.advance(1000);
    await eventually(() => rotated.length === 1, 'issued');
    manager.stop();
  });
});
