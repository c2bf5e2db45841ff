import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { RedisUnavailableError, isRedisUnavailableError } from './errors.js';
import {
  ConnectionDroppedError,
  ConnectionFamily,
  FailFast,
  QUEUE_ROLE,
  connectRedis,
  connectionOptions,
  parseSentinelAddresses,
  sentinelSettings,
} from './redis.js';

const SENTINEL = { sentinels: [{ host: 'sentinel-0.queue', port: 26379 }, { host: '10.0.0.7', port: 26380 }], masterName: 'nodelet' };

describe('Redis connection options', () => {
  it("gives the queue's one connection a worker's patience: a command waits for the reconnect (BullMQ's Worker shares it)", () => {
    assert.deepEqual(connectionOptions(QUEUE_ROLE, undefined), { maxRetriesPerRequest: null, connectionName: 'nodelet-queue' });
  });

  it('adds the sentinels and the master name in Sentinel mode, nothing else', () => {
    assert.deepEqual(connectionOptions(QUEUE_ROLE, SENTINEL), {
      maxRetriesPerRequest: null,
      connectionName: 'nodelet-queue',
      sentinels: [{ host: 'sentinel-0.queue', port: 26379 }, { host: '10.0.0.7', port: 26380 }],
      name: 'nodelet',
    });
  });

  it("connects to the URL's Redis without sentinels", () => {
    const redis = connectRedis('redis://queue.example:6380/2', QUEUE_ROLE);
    redis.disconnect();
    assert.equal(redis.options.host, 'queue.example');
    assert.equal(redis.options.port, 6380);
    assert.equal(redis.options.db, 2);
    assert.equal(redis.options.sentinels, null);
    assert.equal(redis.options.connectionName, 'nodelet-queue');
  });

  it("asks the sentinels with Sentinel settings, taking only the URL's password and database", () => {
    const redis = connectRedis('redis://:s%40cret@ignored.example:1/3', QUEUE_ROLE, SENTINEL);
    redis.disconnect();
    assert.deepEqual(redis.options.sentinels, SENTINEL.sentinels);
    assert.equal(redis.options.name, 'nodelet');
    assert.equal(redis.options.password, 's@cret');
    assert.equal(redis.options.db, 3);
    assert.equal(redis.options.maxRetriesPerRequest, null);
    assert.notEqual(redis.options.host, 'ignored.example');
  });

  it("takes the URL's user too with Sentinel settings (a node's own Redis user)", () => {
    const redis = connectRedis('redis://nodelet-node-a:pw@ignored.example:1', QUEUE_ROLE, SENTINEL);
    redis.disconnect();
    assert.equal(redis.options.username, 'nodelet-node-a');
    assert.equal(redis.options.password, 'pw');
  });
});

/** A connection's status and its `ready` and `close` events, driven by the test. */
class FakeConnection extends EventEmitter {
  status = 'connecting';

  become(status: 'ready' | 'reconnecting'): void {
    this.status = status;
    this.emit(status === 'ready' ? 'ready' : 'close');
  }
}

describe("the fail-fast of the queue's own commands", () => {
  it('lets commands wait for the first connect, as the offline queue does', async () => {
    const connection = new FakeConnection();
    const failFast = new FailFast(connection);
    const sent: string[] = [];
    const reply = failFast.run(() => {
      sent.push('add');
      return Promise.resolve('OK');
    });
    assert.equal(await reply, 'OK');
    assert.deepEqual(sent, ['add']);
  });

  it('refuses without sending while the connection is down, and sends again once it is back', async () => {
    const connection = new FakeConnection();
    const failFast = new FailFast(connection);
    connection.become('ready');
    connection.become('reconnecting');
    let sent = 0;
    const send = (): Promise<string> => {
      sent += 1;
      return Promise.resolve('OK');
    };
    await assert.rejects(failFast.run(send), (err: unknown) => isRedisUnavailableError(err) && err.message.includes('reconnecting'));
    assert.equal(sent, 0, 'nothing is handed to ioredis during the outage');
    connection.become('ready');
    assert.equal(await failFast.run(send), 'OK');
    assert.equal(sent, 1);
  });

  it('rejects a command still waiting for its reply when the connection goes down', async () => {
    const connection = new FakeConnection();
    const failFast = new FailFast(connection);
    connection.become('ready');
    const waiting = failFast.run(() => new Promise<string>(() => undefined));
    connection.become('reconnecting');
    await assert.rejects(waiting, RedisUnavailableError);
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

describe("a connection family's disconnect between reconnect attempts", () => {
  it('ends the connection and rejects its queued commands, where ioredis would leave them pending for good', { timeout: 5_000 }, async () => {
    // Port 1 refuses at once; the next attempt is a minute away: the connection sits in `reconnecting`.
    const redis = new ConnectionFamily({ host: '127.0.0.1', port: 1, retryStrategy: () => 60_000, maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    await new Promise<void>((resolve) => redis.once('reconnecting', () => { resolve(); }));
    const queued = redis.get('some-key');
    const ended = new Promise<void>((resolve) => redis.once('end', () => { resolve(); }));
    redis.disconnect();
    await assert.rejects(queued, /Connection is closed/);
    await ended;
    assert.equal(redis.status, 'end');
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
