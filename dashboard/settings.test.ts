import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDashboardFlagError, parseDashboardSettings, parseListen } from './settings.js';
import type { DashboardSettings } from './settings.js';

const noFile = (path: string): string => {
  throw new Error(`ENOENT: no such file ${path}`);
};

function parse(argv: string[], env: NodeJS.ProcessEnv = {}, readFile = noFile): DashboardSettings {
  const settings = parseDashboardSettings({ argv, env, readFile });
  assert.notEqual(settings, 'help');
  return settings as DashboardSettings;
}

function flagError(argv: string[], env: NodeJS.ProcessEnv = {}, readFile = noFile): string {
  try {
    parseDashboardSettings({ argv, env, readFile });
  } catch (error) {
    assert.ok(isDashboardFlagError(error), `expected a DashboardFlagError, got ${String(error)}`);
    return error.message;
  }
  assert.fail('expected the settings to be refused');
}

describe('parseDashboardSettings', () => {
  it('binds to loopback port 3000, read-only, when only a token is given', () => {
    const s = parse([], { NODELET_DASHBOARD_TOKEN: 'abc' });
    assert.deepEqual(s.listen, { host: '127.0.0.1', port: 3000 });
    assert.deepEqual(s.auth, { kind: 'token', token: 'abc' });
    assert.equal(s.allowActions, false);
    assert.equal(s.prefix, 'nodelet');
    assert.equal(s.refreshIntervalMs, 10_000);
    assert.equal(s.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(s.redisSentinel, undefined);
  });

  it('reaches Redis through sentinels when given, and refuses a bad sentinel', () => {
    const s = parse(['--no-auth', '--redis-sentinels', '[fd00::2]:26379', '--redis-sentinel-master', 'queue'], {});
    assert.deepEqual(s.redisSentinel, { sentinels: [{ host: 'fd00::2', port: 26379 }], masterName: 'queue' });
    assert.match(flagError(['--no-auth'], { REDIS_SENTINELS: 'nohost' }), /--redis-sentinels/);
  });

  it('reads a Redis Cluster from --redis-cluster-nodes (or REDIS_CLUSTER_NODES), never with sentinels', () => {
    assert.equal(parse(['--no-auth'], {}).redisCluster, undefined);
    assert.deepEqual(parse(['--no-auth'], { REDIS_CLUSTER_NODES: 'redis-0:6379,redis-1:6379' }).redisCluster, { nodes: [{ host: 'redis-0', port: 6379 }, { host: 'redis-1', port: 6379 }] });
    assert.match(flagError(['--no-auth', '--redis-cluster-nodes', 'redis-0'], {}), /--redis-cluster-nodes/);
    assert.match(flagError(['--no-auth', '--redis-cluster-nodes', 'c:1', '--redis-sentinels', 's:2'], {}), /exclude each other/);
  });

  it('refuses to start without a token unless --no-auth is given', () => {
    assert.match(flagError([]), /token is required/);
    assert.deepEqual(parse(['--no-auth']).auth, { kind: 'none' });
  });

  it('treats a blank NODELET_DASHBOARD_TOKEN as no token', () => {
    assert.match(flagError([], { NODELET_DASHBOARD_TOKEN: '  ' }), /token is required/);
  });

  it('reads the token from --token-file, trimmed, over the environment', () => {
    const s = parse(['--token-file', '/secret/token'], { NODELET_DASHBOARD_TOKEN: 'env' }, (path) => {
      assert.equal(path, '/secret/token');
      return 'from-file\n';
    });
    assert.deepEqual(s.auth, { kind: 'token', token: 'from-file' });
  });

  it('refuses an empty or unreadable token file', () => {
    assert.match(flagError(['--token-file', '/t'], {}, () => '\n'), /is empty/);
    assert.match(flagError(['--token-file', '/missing']), /--token-file \/missing: ENOENT/);
  });

  it('refuses --no-auth together with --token-file', () => {
    assert.match(flagError(['--no-auth', '--token-file', '/t'], {}, () => 't'), /contradict/);
  });

  it('enables actions only with --allow-actions', () => {
    assert.equal(parse(['--no-auth', '--allow-actions']).allowActions, true);
  });

  it('takes the Redis URL from the flag, then REDIS_URL', () => {
    assert.equal(parse(['--no-auth'], { REDIS_URL: 'redis://127.0.0.1:16379' }).redisUrl, 'redis://127.0.0.1:16379');
    assert.equal(parse(['--no-auth', '--redis-url', 'redis://r:1'], { REDIS_URL: 'redis://x:2' }).redisUrl, 'redis://r:1');
  });

  it('reports unknown flags and bad values as flag errors', () => {
    assert.match(flagError(['--no-auth', '--bogus']), /bogus/);
    assert.match(flagError(['--no-auth', '--refresh-interval', '0']), /--refresh-interval must be a positive integer/);
    assert.match(flagError(['--no-auth', '--log-level', 'loud']), /--log-level/);
    assert.match(flagError(['--no-auth', '--prefix', 'a:b']), /--prefix/);
    assert.match(flagError(['--no-auth', '--listen', 'nohost']), /--listen must be HOST:PORT/);
  });

  it('answers help for -h', () => {
    assert.equal(parseDashboardSettings({ argv: ['-h'], env: {}, readFile: noFile }), 'help');
  });
});

describe('parseListen', () => {
  it('parses host and port, IPv6 in brackets, and an empty host as all interfaces', () => {
    assert.deepEqual(parseListen('0.0.0.0:3000'), { host: '0.0.0.0', port: 3000 });
    assert.deepEqual(parseListen('[::1]:8080'), { host: '::1', port: 8080 });
    assert.deepEqual(parseListen(':0'), { host: '0.0.0.0', port: 0 });
    assert.deepEqual(parseListen('localhost:1'), { host: 'localhost', port: 1 });
  });

  it('refuses ports out of range and missing ports', () => {
    assert.throws(() => parseListen('127.0.0.1:70000'), /--listen/);
    assert.throws(() => parseListen('127.0.0.1'), /--listen/);
    assert.throws(() => parseListen('::1:80'), /--listen/);
  });
});
