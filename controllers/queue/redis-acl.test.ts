import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ensureNodeRedisPassword, withRedisCredentials } from './node-redis-password.js';
import { dashboardAclRules, isPasswordSha256, nodeAclRules, nodeRedisUser, passwordSha256 } from './redis-acl.js';

describe('Redis ACL rules of a node and of the dashboard', () => {
  it("confines a node's user to its own queue's keys, without dangerous commands, key listings or channels", () => {
    const hash = passwordSha256('pw');
    assert.equal(nodeRedisUser('host-a-nodelet'), 'nodelet-node-host-a-nodelet');
    assert.deepEqual(nodeAclRules('host-a-nodelet', hash), [
      'reset', 'on', `#${hash}`, '~nodelet:nodelet-reconcile-host-a-nodelet:*', 'resetchannels',
      '+@all', '-@dangerous', '-scan', '-randomkey', '+info', '+client|setname', '+client|getname', '+client|list', '+client|id',
    ]);
  });

  it('gives the dashboard every queue, read-only unless it may act', () => {
    const hash = passwordSha256('pw');
    const readOnly = dashboardAclRules(hash, false);
    assert.ok(readOnly.includes('~nodelet:*') && readOnly.includes('-@write') && !readOnly.includes('+@all'));
    assert.ok(dashboardAclRules(hash, true).includes('+@all'));
  });

  it('hashes as Redis does (SHA-256, hex) and recognises only such hashes', () => {
    assert.equal(passwordSha256('foobar'), 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2');
    assert.equal(isPasswordSha256(passwordSha256('x')), true);
    assert.equal(isPasswordSha256('nopass'), false);
    assert.equal(isPasswordSha256(`${passwordSha256('x')} ~*`), false, 'no extra rules smuggled in');
  });
});

describe("the node's Redis password", () => {
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('is made once, kept private on the host and reused', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'redis-pw-'));
    dirs.push(dir);
    const file = path.join(dir, 'redis', 'password');
    const first = await ensureNodeRedisPassword(file);
    assert.match(first, /^[0-9a-f]{64}$/);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(await ensureNodeRedisPassword(file), first);
    assert.equal((await readFile(file, 'utf8')).trim(), first);
  });

  it('goes into the URL as its user and password, replacing any there', () => {
    assert.equal(withRedisCredentials('redis://old:secret@redis.ns.svc:6379/2', 'nodelet-node-a', 'p@ss'), 'redis://nodelet-node-a:p%40ss@redis.ns.svc:6379/2');
  });
});
