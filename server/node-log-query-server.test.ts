/**
 * `/logs/?query=…` over the real node server (TLS on loopback) with the node log query on, on a
 * temporary log directory laid out as the one the kubelet v1.37.2 was run against (its Run()
 * wiring of /logs/ and its journal code, built with Go 1.26, journalctl absent from its PATH): each
 * expected status, content type and body below is what the kubelet answered. Services are found
 * as files; links that leave the directory (absolute ones too) are refused in Go's words; the
 * file server serves a file query; gzip; the 30 s copy deadline (shortened here).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { API_SERVER_CLIENT, getAs, SERVING, startTestServer, type TestServer } from '../test/doubles/node-server-harness.js';
import { serveNodeLogsWithQuery } from './node-log-query-server.js';
import type { RouteRequest } from './routes.js';

const run = promisify(execFile);
const TEXT = 'text/plain;charset=UTF-8';
const ERROR = 'text/plain; charset=utf-8';
const SYSLOG = 'line 1\nline 2\n';

/** GETs `urlPath`, reading nothing for `pauseMs` (the server meets backpressure), then everything. */
function getSlowly(port: number, urlPath: string, pauseMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, ca: SERVING.certPem, cert: API_SERVER_CLIENT.certPem, key: API_SERVER_CLIENT.keyPem, agent: false }, (res) => {
      res.pause();
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => { resolve(Buffer.concat(chunks)); });
      res.on('error', reject);
      setTimeout(() => res.resume(), pauseMs);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('/logs/?query= (the node log query, journalctl absent)', () => {
  let top = '';
  let root = '';
  let t: TestServer;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'node-log-query-'));
    root = path.join(top, 'var-log');
    for (const dir of ['pods/ns_web_uid/app', 'kubelet', 'containerd', 'svcdir']) await mkdir(path.join(root, dir), { recursive: true });
    await writeFile(path.join(root, 'syslog'), SYSLOG);
    await writeFile(path.join(root, 'kubelet', 'kubelet.log'), 'kubelet dir log\n');
    await writeFile(path.join(root, 'containerd.log'), 'containerd.log\n');
    await writeFile(path.join(root, 'a\\b'), 'x\n');
    await writeFile(path.join(top, 'secret'), 'SECRET\n');
    await symlink(path.join(top, 'secret'), path.join(root, 'out'));
    await symlink('syslog', path.join(root, 'rel.link'));
    // Inside the root, but absolute or climbing out and back: Go's os.Root refuses both.
    await symlink(path.join(root, 'syslog'), path.join(root, 'abs.link'));
    await symlink('../var-log/syslog', path.join(root, 'updown.link'));
    await symlink('pods', path.join(root, 'podlink'));
    await symlink('loop2', path.join(root, 'loop1'));
    await symlink('loop1', path.join(root, 'loop2'));
    await run('mkfifo', [path.join(root, 'fifo')]);
    // 1 GiB of holes: what a copy cut by its deadline reads.
    await writeFile(path.join(root, 'big'), '');
    await truncate(path.join(root, 'big'), 1024 ** 3);
    t = await startTestServer([{ method: 'GET', pattern: '/logs/{*}', handler: (r: RouteRequest) => serveNodeLogsWithQuery(r, { dir: root, copyTimeoutMs: 300 }), getOnly: true }]);
  });

  after(async () => {
    await t.server.stop();
    await rm(top, { recursive: true, force: true });
  });

  /** The kubelet's answers: [query string, status, content type, body]. */
  const kubelet: readonly [string, number, string, string][] = [
    ['query=syslog', 200, TEXT, SYSLOG],
    ['query=kubelet', 200, TEXT, 'kubelet dir log\n'],
    ['query=containerd', 200, TEXT, 'containerd.log\n'],
    ['query=nope&query=syslog', 200, TEXT, `\nlog not found for nope\n${SYSLOG}`],
    ['query=syslog&query=syslog', 200, TEXT, SYSLOG + SYSLOG],
    ['query=rel.link', 200, TEXT, SYSLOG],
    ['query=svcdir', 200, TEXT, '\nlog not found for svcdir\n'],
    ['query=.', 200, TEXT, '\nlog not found for .\n'],
    ['query=..', 200, TEXT, '\nerror getting log for ..: openat ..: path escapes from parent\n'],
    ['query=out', 200, TEXT, '\nerror getting log for out: openat out: path escapes from parent\n'],
    ['query=abs.link', 200, TEXT, '\nerror getting log for abs.link: openat abs.link: path escapes from parent\n'],
    ['query=loop1', 200, TEXT, '\nerror getting log for loop1: openat loop1: too many levels of symbolic links\n'],
    ['query=syslog&tailLines=5', 200, TEXT, '\noptions present and query resolved to log files for [syslog]\ntry without specifying options\n'],
    ['query=k&boot=-1', 200, TEXT, '\noptions present and query resolved to log files for [k]\ntry without specifying options\n'],
    ['query=syslog&pattern=', 200, TEXT, SYSLOG],
    ['query=./syslog', 200, ERROR, SYSLOG],
    ['query=./rel.link', 200, ERROR, SYSLOG],
    ['query=a%5Cb', 200, ERROR, 'x\n'],
    ['query=/syslog', 406, ERROR, 'query: Invalid value: ["/syslog"]: statat /syslog: path escapes from parent\n'],
    ['query=../etc/passwd', 406, ERROR, 'query: Invalid value: ["../etc/passwd"]: statat ../etc/passwd: path escapes from parent\n'],
    ['query=x/../syslog', 406, ERROR, 'query: Invalid value: ["x/../syslog"]: statat x/../syslog: no such file or directory\n'],
    ['query=./out', 406, ERROR, 'query: Invalid value: ["./out"]: statat ./out: path escapes from parent\n'],
    ['query=./abs.link', 406, ERROR, 'query: Invalid value: ["./abs.link"]: statat ./abs.link: path escapes from parent\n'],
    ['query=./updown.link', 406, ERROR, 'query: Invalid value: ["./updown.link"]: statat ./updown.link: path escapes from parent\n'],
    ['query=./syslog/x', 406, ERROR, 'query: Invalid value: ["./syslog/x"]: statat ./syslog/x: not a directory\n'],
    ['query=./syslog/', 406, ERROR, 'query: Invalid value: ["./syslog/"]: statat ./syslog/: not a directory\n'],
    ['query=./loop1', 406, ERROR, 'query: Invalid value: ["./loop1"]: statat ./loop1: too many levels of symbolic links\n'],
    ['query=./syslog&tailLines=5', 406, ERROR, 'query: Invalid value: ["./syslog"]: cannot specify file with options\n'],
    ['tailLines=5', 406, ERROR, 'query: Required value: cannot be empty with options\n'],
    ['query=', 400, ERROR, 'query: Invalid value: [""]: may not be empty\n'],
  ];
  for (const [raw, status, type, body] of kubelet) {
    it(`?${raw}: ${String(status)}`, async () => {
      const reply = await getAs(t.port, `/logs/?${raw}`);
      assert.deepEqual([reply.status, reply.headers['content-type'], reply.body.toString()], [status, type, body]);
      if (status >= 400) assert.equal(reply.headers['x-content-type-options'], 'nosniff');
    });
  }

  it('serves a directory query as its listing, and redirects one without its slash keeping the raw query', async () => {
    for (const dir of ['pods/', './podlink/']) assert.match((await getAs(t.port, `/logs/?query=${dir}`)).body.toString(), /<a href="ns_web_uid\/">ns_web_uid\/<\/a>/u, dir);
    const moved = await getAs(t.port, '/logs/?query=./podlink');
    assert.deepEqual([moved.status, moved.headers.location], [301, 'podlink/?query=./podlink']);
  });

  it("refuses a path with a query (406) and leaves requests without one to the file server", async () => {
    for (const p of ['/logs/foo?query=k', '/logs/syslog?query=k']) {
      const reply = await getAs(t.port, p);
      assert.deepEqual([reply.status, reply.body.toString()], [406, 'path not allowed in query mode\n'], p);
    }
    assert.match((await getAs(t.port, '/logs/?foo=bar')).body.toString(), /<a href="syslog">syslog<\/a>/u);
    assert.equal((await getAs(t.port, '/logs/syslog?pattern=')).body.toString(), SYSLOG);
    // The file server keeps its own guarantees: a FIFO (which Go's would block on) is 404.
    assert.equal((await getAs(t.port, '/logs/?query=./fifo')).status, 404);
  });

  it('skips a FIFO where a service log would be, instead of blocking on it (the kubelet would hang)', async () => {
    const reply = await getAs(t.port, '/logs/?query=fifo');
    // The next candidates as Go tries them: fifo.log is absent, fifo/fifo.log passes through a non-directory.
    assert.deepEqual([reply.status, reply.body.toString()], [200, '\nerror getting log for fifo: openat fifo/fifo.log: not a directory\n']);
  });

  it('compresses with gzip when Accept-Encoding is exactly gzip', async () => {
    const zipped = await getAs(t.port, '/logs/?query=syslog', 'GET', { 'Accept-Encoding': 'gzip' });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(zipped.body).toString(), SYSLOG);
    const plain = await getAs(t.port, '/logs/?query=syslog', 'GET', { 'Accept-Encoding': 'gzip, deflate' });
    assert.deepEqual([plain.headers['content-encoding'], plain.body.toString()], [undefined, SYSLOG]);
  });

  it('stops a copy at its deadline and says so, as the kubelet after 30 s', async () => {
    const body = await getSlowly(t.port, '/logs/?query=big', 1_000);
    const tail = '\nerror getting log for big: context deadline exceeded\n';
    assert.ok(body.length < 1024 ** 3, 'the whole gigabyte was sent');
    assert.equal(body.subarray(body.length - tail.length).toString(), tail);
  });

  it('answers HEAD and POST with 405 naming GET, before any query is read', async () => {
    for (const method of ['HEAD', 'POST']) {
      const reply = await getAs(t.port, '/logs/?query=syslog', method);
      assert.deepEqual([reply.status, reply.headers.allow], [405, 'GET'], method);
    }
  });
});
