import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { SELF_SIGNED_KEY, servingCredentials } from './tls.js';

describe('servingCredentials', () => {
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("makes a self-signed certificate for the node's IP and name, keeps it across restarts, and replaces it when the IP changes", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'tls-'));
    dirs.push(root);
    const pkiDir = path.join(root, 'pki');
    const base = { pkiDir, nodeName: 'node-1', nodeIp: '10.1.2.3', now: Date.now() };
    const first = await servingCredentials(base);
    assert.equal(first.source, 'self-signed (new)');
    const cert = new X509Certificate(first.certPem);
    assert.equal(cert.checkIP('10.1.2.3'), '10.1.2.3');
    assert.equal(cert.checkHost('node-1'), 'node-1');
    assert.ok(cert.verify(cert.publicKey), 'self-signed');
    assert.equal((await stat(path.join(pkiDir, SELF_SIGNED_KEY))).mode & 0o777, 0o600);
    const again = await servingCredentials({ ...base, now: base.now + 1000 });
    assert.deepEqual([again.source, again.certPem, again.keyPem], ['self-signed (kept)', first.certPem, first.keyPem]);
    const moved = await servingCredentials({ ...base, nodeIp: '10.1.2.4' });
    assert.equal(moved.source, 'self-signed (new)');
    assert.equal(new X509Certificate(moved.certPem).checkIP('10.1.2.4'), '10.1.2.4');
    const expired = await servingCredentials({ ...base, nodeIp: '10.1.2.4', now: base.now + 400 * 24 * 3600 * 1000 });
    assert.equal(expired.source, 'self-signed (new)');
  });
});
