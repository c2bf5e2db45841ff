/**
 * `/logs/` over the real node server (TLS on loopback) on a temporary directory laid out as a
 * hostile /var/log: a listing as Go's file server writes it, file bytes intact, the redirects, the
 * query ignored (NodeLogQuery off), and no way out of the root: `..` raw or encoded, `%2F`, NUL,
 * symbolic links to a file or a directory outside, a FIFO that would block a read forever.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { getAs, startTestServer, type TestServer } from '../test/doubles/node-server-harness.js';
import { cleanLogPath, serveNodeLogs, sniffContentType } from './node-logs.js';
import type { RouteRequest } from './routes.js';

const run = promisify(execFile);

describe('/logs/ (the node log directory)', () => {
  let top = '';
  let root = '';
  let t: TestServer;
  const binary = randomBytes(300_000);

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'node-logs-'));
    root = path.join(top, 'var-log');
    await mkdir(path.join(root, 'pods', 'ns_web_uid', 'app'), { recursive: true });
    await writeFile(path.join(root, 'syslog'), 'line 1\nline 2\n');
    await writeFile(path.join(root, 'a & <b>.log'), 'odd name\n');
    await writeFile(path.join(root, 'blob.bin'), binary);
    await writeFile(path.join(root, 'pods', 'ns_web_uid', 'app', '0.log'), 'container line\n');
    // Outside the root: what an escape would read.
    await writeFile(path.join(top, 'secret'), 'SECRET\n');
    await mkdir(path.join(top, 'elsewhere'));
    await writeFile(path.join(top, 'elsewhere', 'inside'), 'SECRET TOO\n');
    await symlink(path.join(top, 'secret'), path.join(root, 'to-secret'));
    await symlink(path.join(top, 'elsewhere'), path.join(root, 'to-elsewhere'));
    await symlink('/etc/passwd', path.join(root, 'passwd'));
    await symlink('syslog', path.join(root, 'syslog.link'));
    await run('mkfifo', [path.join(root, 'fifo')]);
    t = await startTestServer([{ method: 'GET', pattern: '/logs/{*}', handler: (r: RouteRequest) => serveNodeLogs(r, { dir: root }), getOnly: true }]);
  });

  after(async () => {
    await t.server.stop();
    await rm(top, { recursive: true, force: true });
  });

  it("lists the root as Go's file server does, sorted, directories with a slash, names escaped", async () => {
    const reply = await getAs(t.port, '/logs/');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'text/html; charset=utf-8');
    const names = ['a & <b>.log', 'blob.bin', 'fifo', 'passwd', 'pods/', 'syslog', 'syslog.link', 'to-elsewhere', 'to-secret'];
    const hrefs = ['a%20&%20%3Cb%3E.log', 'blob.bin', 'fifo', 'passwd', 'pods/', 'syslog', 'syslog.link', 'to-elsewhere', 'to-secret'];
    const rows = names.map((n, i) => `<a href="${hrefs[i] ?? ''}">${n.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</a>\n`);
    assert.equal(reply.body.toString(), `<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n${rows.join('')}</pre>\n`);
    // The authorizer was asked for nodes/log, as the kubelet asks.
    assert.deepEqual([...new Set(t.access.asked.map((a) => `${a.verb} ${a.subresource}`))], ['get log']);
  });

  it('serves files byte for byte (a 300 kB binary too), and a subdirectory', async () => {
    const text = await getAs(t.port, '/logs/syslog');
    assert.deepEqual([text.status, text.headers['content-type'], text.headers['content-length'], text.body.toString()], [200, 'text/plain; charset=utf-8', '14', 'line 1\nline 2\n']);
    const blob = await getAs(t.port, '/logs/blob.bin');
    assert.equal(blob.status, 200);
    assert.equal(blob.body.length, binary.length);
    assert.ok(blob.body.equals(binary), 'the binary file came back changed');
    assert.equal((await getAs(t.port, '/logs/pods/ns_web_uid/app/0.log')).body.toString(), 'container line\n');
    assert.match((await getAs(t.port, '/logs/pods/ns_web_uid/')).body.toString(), /<a href="app\/">app\/<\/a>/u);
    assert.equal((await getAs(t.port, '/logs/a%20%26%20%3Cb%3E.log')).body.toString(), 'odd name\n');
    // A link that stays inside the root is followed.
    assert.equal((await getAs(t.port, '/logs/syslog.link')).body.toString(), 'line 1\nline 2\n');
    // The kubelet 1.37's GETOnlyRestfulFilter: HEAD too is refused, naming GET.
    const head = await getAs(t.port, '/logs/syslog', 'HEAD');
    assert.deepEqual([head.status, head.headers.allow], [405, 'GET']);
  });

  it('redirects a directory without its slash and a file with one, as Go does; /logs itself is 404', async () => {
    const dir = await getAs(t.port, '/logs/pods?x=1');
    assert.deepEqual([dir.status, dir.headers.location], [301, 'pods/?x=1']);
    const file = await getAs(t.port, '/logs/syslog/');
    assert.deepEqual([file.status, file.headers.location], [301, '../syslog']);
    assert.equal((await getAs(t.port, '/logs')).status, 404);
  });

  it('ignores ?query= (NodeLogQuery is off by default): the file server answers', async () => {
    const reply = await getAs(t.port, '/logs/?query=kubelet&boot=0');
    assert.equal(reply.status, 200);
    assert.match(reply.body.toString(), /<a href="syslog">syslog<\/a>/u);
  });

  it('never leaves the root: .., encoded .., %2F, NUL, links out, a FIFO; each 404 and the secret never sent', async () => {
    const attempts = [
      '/logs/../secret',
      '/logs/%2e%2e/secret',
      '/logs/%2E%2E%2Fsecret',
      '/logs/..%2F..%2F..%2F..%2Fetc%2Fpasswd',
      '/logs/pods/..%2F..%2F..%2Fsecret',
      '/logs/to-secret',
      '/logs/to-elsewhere/inside',
      '/logs/to-elsewhere/',
      '/logs/passwd',
      '/logs/syslog%00.txt',
      '/logs/fifo',
      '/logs/nope',
    ];
    for (const attempt of attempts) {
      const reply = await getAs(t.port, attempt);
      const body = reply.body.toString();
      assert.ok(!body.includes('SECRET') && !body.includes('root:'), `${attempt} leaked a file outside the root`);
      // `..` raw or as %2e%2e is resolved by the URL parser before routing: /secret is not a route (404).
      assert.equal(reply.status, 404, `${attempt}: ${String(reply.status)} ${body}`);
    }
    assert.equal((await getAs(t.port, '/logs/%zz')).status, 400);
  });

  it('cleans paths as Go path.Clean("/"+name) and sniffs content types as Go for logs', () => {
    assert.equal(cleanLogPath('../../etc/passwd'), '/etc/passwd');
    assert.equal(cleanLogPath('a/./b//../c'), '/a/c');
    assert.equal(cleanLogPath('a\0b'), undefined);
    assert.equal(sniffContentType(Buffer.from([0x1f, 0x8b, 0x08, 0])), 'application/x-gzip');
    assert.equal(sniffContentType(Buffer.from('text\twith tabs\r\n')), 'text/plain; charset=utf-8');
    assert.equal(sniffContentType(Buffer.from([0x41, 0x00])), 'application/octet-stream');
  });
});
