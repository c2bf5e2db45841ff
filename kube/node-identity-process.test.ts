/**
 * The bootstrap in a process of its own, as the agent runs it: nothing else holds the process open
 * while it waits for an approval (the clock's timers are unref'd), yet it must wait, not exit.
 * Against the fake certificates API over HTTP, signed by a test CA with openssl once the test says so.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeCertificatesApi } from '../test/doubles/fake-certificates-api.js';
import { makeCertificate } from './certificates/x509.js';
import { CLIENT_PAIR_FILE } from './node-identity.js';

const DAY_MS = 24 * 3600 * 1000;
const ca = makeCertificate({ subject: { commonName: 'test-ca' }, isCa: true, notBefore: new Date(Date.now() - DAY_MS), notAfter: new Date(Date.now() + 30 * DAY_MS) });

/** The child: establish the identity, say so, stop. */
const CHILD = `
import { pino } from 'pino';
import { establishNodeIdentity } from ${JSON.stringify(path.join(import.meta.dirname, 'node-identity.ts'))};
import { systemClock } from ${JSON.stringify(path.join(import.meta.dirname, '..', 'util', 'clock.ts'))};
const identity = await establishNodeIdentity({
  nodeName: 'n1', bootstrap: { server: process.env.FAKE_URL, insecureSkipTlsVerify: false }, certDir: process.env.CERT_DIR,
  rotate: false, clock: systemClock, random: () => 0, logger: pino({ level: 'silent' }), pollMs: 100,
});
process.stdout.write('established ' + JSON.stringify(identity.endpoint.clientCert));
identity.stop();
`;

function sign(csrPem: string, dir: string): string {
  const files = { csr: path.join(dir, 'req.csr'), ca: path.join(dir, 'ca.crt'), key: path.join(dir, 'ca.key') };
  writeFileSync(files.csr, csrPem);
  writeFileSync(files.ca, ca.certPem);
  writeFileSync(files.key, ca.keyPem);
  return execFileSync('openssl', ['x509', '-req', '-in', files.csr, '-CA', files.ca, '-CAkey', files.key, '-CAcreateserial', '-days', '1'], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

describe('node identity in its own process', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'node-identity-process-'));
  const api = new FakeCertificatesApi();
  after(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the approval with nothing else running, then stores the pair and goes on', async () => {
    await api.start();
    const certDir = path.join(dir, 'pki');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { env: { ...process.env, FAKE_URL: api.client().transport.endpoint.server, CERT_DIR: certDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    let created: string | undefined;
    for (let i = 0; i < 200 && created === undefined; i += 1) {
      created = api.requests.find((r) => r.method === 'POST' && r.status === 201) === undefined ? undefined : 'yes';
      await sleep(50);
    }
    assert.ok(created, `the child made no request: ${stderr}`);
    // Nobody approves for a while: the child must still be there, polling.
    await sleep(1500);
    assert.equal(child.exitCode, null, `the child exited while waiting for approval: ${stdout}${stderr}`);
    const name = api.requests.find((r) => r.method === 'POST')?.body as { metadata: { generateName: string } } | undefined;
    assert.equal(name?.metadata.generateName, 'nodelet-client-n1-');
    const [csr] = (await api.client().get<{ items: { metadata: { name: string }; spec: { request: string } }[] }>('/apis/certificates.k8s.io/v1/certificatesigningrequests')).items;
    assert.ok(csr);
    const certPem = sign(Buffer.from(csr.spec.request, 'base64').toString('utf8'), dir);
    api.updateCsr(csr.metadata.name, (c) => {
      c.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'Test', message: 'test', lastUpdateTime: new Date() }], certificate: Buffer.from(certPem).toString('base64') };
    });
    assert.equal(await exited, 0, stderr);
    assert.match(stdout, /^established /);
    assert.ok(existsSync(path.join(certDir, CLIENT_PAIR_FILE)));
  });
});
