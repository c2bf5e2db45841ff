import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';

describe('parseSettings', () => {
  it('takes flags over the environment', () => {
    const s = parseSettings(['--node-name', 'Flag-Node', '--cri-endpoint', 'unix:///a.sock'], { NODE_NAME: 'env-node', CONTAINER_RUNTIME_ENDPOINT: 'unix:///b.sock' });
    assert.ok(s !== 'help');
    assert.equal(s.nodeName, 'flag-node');
    assert.equal(s.criEndpoint, 'unix:///a.sock');
  });

  it('falls back to the environment, then defaults', () => {
    const s = parseSettings([], { CONTAINER_RUNTIME_ENDPOINT: 'unix:///b.sock', REDIS_URL: 'redis://127.0.0.1:1' });
    assert.ok(s !== 'help');
    assert.equal(s.redisUrl, 'redis://127.0.0.1:1');
    assert.equal(s.rootDir, '/var/lib/nodelet');
    assert.equal(s.concurrency, 4);
    assert.equal(s.resyncPeriodMs, 60_000);
  });

  it('refuses to start without a CRI endpoint', () => {
    assert.throws(() => parseSettings([], {}), FlagError);
  });

  it('refuses a concurrency that is not a positive integer', () => {
    assert.throws(() => parseSettings(['--concurrency', '0', '--cri-endpoint', 'x'], {}), /--concurrency must be a positive integer/);
  });

  it('refuses an unknown log level', () => {
    assert.throws(() => parseSettings(['--log-level', 'loud', '--cri-endpoint', 'x'], {}), FlagError);
  });

  it('answers help', () => {
    assert.equal(parseSettings(['--help'], {}), 'help');
  });
});
