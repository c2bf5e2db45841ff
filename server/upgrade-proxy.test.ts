/** The pure parts of the upgrade proxy: which URLs it dials, the head it sends, the head it reads. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUpgradeProxyError, parseResponseHead, streamingTarget, upgradeRequestHead } from './upgrade-proxy.js';

function refused(url: string): string {
  try {
    streamingTarget(url);
  } catch (error) {
    assert.ok(isUpgradeProxyError(error));
    return error.message;
  }
  assert.fail(`${url} was accepted`);
}

describe('streamingTarget', () => {
  it('takes plain http on a loopback IP, with the path and query', () => {
    assert.deepEqual(streamingTarget('http://127.0.0.1:35443/exec/AbC?x=1'), { host: '127.0.0.1', port: 35443, path: '/exec/AbC?x=1' });
    assert.deepEqual(streamingTarget('http://[::1]:1/attach/t'), { host: '::1', port: 1, path: '/attach/t' });
    assert.deepEqual(streamingTarget('http://127.8.9.10/p'), { host: '127.8.9.10', port: 80, path: '/p' });
  });

  it('never takes another address, a name, TLS or garbage', () => {
    assert.match(refused('http://10.0.0.5:10010/exec/t'), /not on a loopback address/);
    assert.match(refused('http://localhost:10010/exec/t'), /not on a loopback address/);
    assert.match(refused('http://[::ffff:10.0.0.1]:1/t'), /not on a loopback address/);
    assert.match(refused('https://127.0.0.1:10010/exec/t'), /not plain http/);
    assert.match(refused('not a url'), /invalid streaming URL/);
  });
});

describe('upgradeRequestHead', () => {
  it('sends the URL path and the upgrade headers only, every value in order', () => {
    const raw = ['Host', 'node:10250', 'Authorization', 'Bearer t', 'Connection', 'Upgrade', 'Upgrade', 'SPDY/3.1', 'X-Stream-Protocol-Version', 'v5.channel.k8s.io', 'X-Stream-Protocol-Version', 'v4.channel.k8s.io', 'Sec-WebSocket-Key', 'k', 'Cookie', 'c', 'Origin', 'o', 'Content-Length', '0'];
    const head = upgradeRequestHead('POST', raw, { host: '127.0.0.1', port: 9, path: '/exec/t' });
    assert.equal(head, 'POST /exec/t HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v5.channel.k8s.io\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nSec-WebSocket-Key: k\r\nOrigin: o\r\n\r\n');
  });

  it('brackets an IPv6 host', () => {
    assert.match(upgradeRequestHead('GET', [], { host: '::1', port: 9, path: '/' }), /\r\nHost: \[::1\]:9\r\n/);
  });
});

describe('parseResponseHead', () => {
  it('waits for the whole head, then reads status, head length and Content-Length', () => {
    assert.equal(parseResponseHead(Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n')), undefined);
    const text = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\nframes';
    assert.deepEqual(parseResponseHead(Buffer.from(text)), { status: 101, headLength: text.length - 'frames'.length, contentLength: undefined });
    assert.deepEqual(parseResponseHead(Buffer.from('HTTP/1.1 404 Not Found\r\ncontent-length: 12\r\n\r\n')), { status: 404, headLength: 46, contentLength: 12 });
  });

  it('refuses what is not an HTTP/1 response', () => {
    assert.throws(() => parseResponseHead(Buffer.from('SSH-2.0-x\r\n\r\n')), isUpgradeProxyError);
  });
});
