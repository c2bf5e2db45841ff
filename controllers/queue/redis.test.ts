import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConnectionDroppedError,
  ConnectionFamily,
  PRODUCER_ROLE,
  WORKER_ROLE,
  connectRedis,
  connectionOptions,
  parseSentinelAddresses,
  sentinelSettings,
} from './redis.js';

const SENTINEL = { sentinels: [{ host: 'sentinel-0.queue', port: 26379 }, { host: '10.0.0.7', port: 26380 }], masterName: 'nodelet' };

describe('Redis connection options', () => {
  it('keeps the roles apart: the producer gives up on a command after 3 reconnects, a worker never (BullMQ requires null)', () => {
    assert.deepEqual(connectionOptions(PRODUCER_ROLE, undefined), { maxRetriesPerRequest: 3, connectionName: 'nodelet-queue' });
    assert.deepEqual(connectionOptions(WORKER_ROLE, undefined), { maxRetriesPerRequest: null, connectionName: 'nodelet-worker' });
  });

  it('adds the sentinels and the master name in Sentinel mode, nothing else', () => {
    assert.deepEqual(connectionOptions(WORKER_ROLE, SENTINEL), {
      maxRetriesPerRequest: null,
      connectionName: 'nodelet-worker',
      sentinels: [{ host: 'sentinel-0.queue', port: 26379 }, { host: '10.0.0.7', port: 26380 }],
      name: 'nodelet',
    });
  });

  it("connects to the URL's Redis without sentinels", () => {
    const redis = connectRedis('redis://queue.example:6380/2', PRODUCER_ROLE);
    redis.disconnect();
    assert.equal(redis.options.host, 'queue.example');
    assert.equal(redis.options.port, 6380);
    assert.equal(redis.options.db, 2);
    assert.equal(redis.options.sentinels, null);
    assert.equal(redis.options.connectionName, 'nodelet-queue');
  });

  it("asks the sentinels with Sentinel settings, taking only the URL's password and database", () => {
    const redis = connectRedis('redis://:s%40cret@ignored.example:1/3', WORKER_ROLE, SENTINEL);
    redis.disconnect();
    assert.deepEqual(redis.options.sentinels, SENTINEL.sentinels);
    assert.equal(redis.options.name, 'nodelet');
    assert.equal(redis.options.password, 's@cret');
    assert.equal(redis.options.db, 3);
    assert.equal(redis.options.maxRetriesPerRequest, null);
    assert.notEqual(redis.options.host, 'ignored.example');
  });

  it("takes the URL's user too with Sentinel settings (a node's own Redis user)", () => {
    const redis = connectRedis('redis://nodelet-node-a:pw@ignored.example:1', WORKER_ROLE, SENTINEL);
    redis.disconnect();
    assert.equal(redis.options.username, 'nodelet-node-a');
    assert.equal(redis.options.password, 'pw');
  });
});

describe('a connection family (dropped at shutdown)', () => {
  it('drops a connection and every duplicate, made before or after the drop, and none connects again', async () => {
    // lazyConnect: nothing connects until asked; port 1 on loopback refuses if anything tried,
    // once (retryStrategy), so a connect() let through fails with ECONNREFUSED instead.
    const base = new ConnectionFamily({ host: '127.0.0.1', port: 1, lazyConnect: true, retryStrategy: () => null, connectionName: 'nodelet-worker' });
    const before = base.duplicate({ connectionName: 'blocking' });
    assert.equal(before.options.connectionName, 'blocking', "a duplicate takes the override, as ioredis' own");
    assert.equal(before.options.port, 1);
    base.dropAll();
    const after = base.duplicate();
    for (const [name, connection] of Object.entries({ base, before, after })) {
      // BullMQ reconnects its blocking connection by calling connect(): refused, not attempted.
      await assert.rejects(connection.connect(), ConnectionDroppedError, name);
      assert.equal(connection.status, 'end', name);
    }
  });
});

describe('sentinel settings from flags', () => {
  it('parses host:port lists, IPv6 in brackets, blanks ignored', () => {
    assert.deepEqual(parseSentinelAddresses(' a.example:26379, [fd00::1]:26380 ,'), [
      { host: 'a.example', port: 26379 },
      { host: 'fd00::1', port: 26380 },
    ]);
    assert.deepEqual(parseSentinelAddresses(''), []);
  });

  it('refuses an entry without a port or with a bad one', () => {
    for (const bad of ['a.example', 'a.example:0', 'a.example:65536', 'fd00::1:26379', ':26379']) {
      assert.throws(() => parseSentinelAddresses(bad), RangeError, bad);
    }
  });

  it('is undefined without sentinels and needs a master name with them', () => {
    assert.equal(sentinelSettings('', 'mymaster'), undefined);
    assert.deepEqual(sentinelSettings('s:26379', ' queue '), { sentinels: [{ host: 's', port: 26379 }], masterName: 'queue' });
    assert.throws(() => sentinelSettings('s:26379', ' '), RangeError);
  });
});
