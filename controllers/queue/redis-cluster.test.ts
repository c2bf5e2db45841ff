import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionDroppedError, ConnectionFamily, QUEUE_ROLE, nodeQueueKeyspace } from './redis.js';
import { ClusterFamily, clusterOptions, clusterSettings, connectTopology, parseRedisTopology } from './redis-cluster.js';

/** Redis Cluster's key slot (CRC16/XMODEM of the hash tag, or of the key without one, mod 16384). */
function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

const keysOf = (keyspace: { prefix: string; name: string }, uid: string): string[] =>
  ['wait', 'active', 'delayed', 'meta', 'events', 'marker', `de:${uid}`, `dn:${uid}`, `${uid}.x1`, `${uid}.x1:lock`, `${uid}.x1:logs`, 'nodelet-sentinel:abc'].map(
    (type) => `${keyspace.prefix}:${keyspace.name}:${type}`,
  );

describe("a node's queue keyspace", () => {
  it('keeps the keys every release wrote on one Redis: prefix nodelet, queue nodelet-reconcile-<node>', () => {
    assert.deepEqual(nodeQueueKeyspace('worker-1', { prefix: 'nodelet', hashTagged: false }), { prefix: 'nodelet', name: 'nodelet-reconcile-worker-1' });
  });

  it('puts every key of one node\'s queue (BullMQ\'s and nodelet\'s own) in one cluster slot, and different nodes in different slots', () => {
    const a = nodeQueueKeyspace('worker-1', { prefix: 'nodelet', hashTagged: true });
    assert.deepEqual(a, { prefix: '{nodelet:worker-1}', name: 'nodelet-reconcile-worker-1' });
    const slotsA = new Set(keysOf(a, 'a9a3b0d2-0000-4000-8000-000000000001').map(keySlot));
    assert.equal(slotsA.size, 1);
    const slotsOfNodes = new Set(Array.from({ length: 50 }, (_, i) => keySlot(`${nodeQueueKeyspace(`n${i}`, { prefix: 'nodelet', hashTagged: true }).prefix}:x`)));
    assert.ok(slotsOfNodes.size > 40, `50 nodes' queues fall in ${slotsOfNodes.size} slots`);
    const untagged = nodeQueueKeyspace('worker-1', { prefix: 'nodelet', hashTagged: false });
    assert.ok(new Set(keysOf(untagged, 'u').map(keySlot)).size > 1, 'without the tag the keys of one queue scatter (what the tag prevents)');
  });
});

describe('Redis Cluster settings', () => {
  it('parses --redis-cluster-nodes; empty text is no cluster', () => {
    assert.equal(clusterSettings(''), undefined);
    assert.deepEqual(clusterSettings('redis-0.redis:6379, [fd00::1]:7000'), { nodes: [{ host: 'redis-0.redis', port: 6379 }, { host: 'fd00::1', port: 7000 }] });
    assert.throws(() => clusterSettings('redis-0'), /a cluster node must be HOST:PORT/);
  });

  it('refuses sentinels and a cluster together, and names the flag of a bad entry', () => {
    assert.throws(() => parseRedisTopology({ sentinels: 's:26379', masterName: 'm', clusterNodes: 'c:6379' }), /exclude each other/);
    assert.throws(() => parseRedisTopology({ sentinels: '', masterName: 'm', clusterNodes: 'c' }), /^RangeError: --redis-cluster-nodes: /);
    assert.deepEqual(parseRedisTopology({ sentinels: '', masterName: 'm', clusterNodes: 'c:1' }), { sentinel: undefined, cluster: { nodes: [{ host: 'c', port: 1 }] } });
  });

  it("gives every node connection the role's name and retries, the URL's credentials, TLS for rediss://, reads from primaries", () => {
    assert.deepEqual(clusterOptions('redis://nodelet:s%40cret@ignored:1/0', QUEUE_ROLE), {
      scaleReads: 'master',
      redisOptions: { connectionName: 'nodelet-queue', maxRetriesPerRequest: null, username: 'nodelet', password: 's@cret' },
    });
    assert.deepEqual(clusterOptions('rediss://ignored', QUEUE_ROLE).redisOptions?.tls, {});
    assert.equal(clusterOptions('redis://ignored', QUEUE_ROLE).slotsRefreshInterval, undefined, 'no periodic CLUSTER SLOTS per agent');
  });

  it('opens a cluster client for a cluster topology and a plain one otherwise', () => {
    const cluster = connectTopology('redis://x', { ...QUEUE_ROLE }, { cluster: { nodes: [{ host: '127.0.0.1', port: 1 }] } });
    const plain = connectTopology('redis://127.0.0.1:1', { ...QUEUE_ROLE }, {});
    try {
      assert.ok(cluster instanceof ClusterFamily);
      assert.ok(plain instanceof ConnectionFamily);
    } finally {
      cluster.on('error', () => undefined);
      plain.on('error', () => undefined);
      cluster.dropAll();
      plain.dropAll();
    }
    assert.throws(() => connectTopology('redis://x', QUEUE_ROLE, { cluster: { nodes: [] }, sentinel: { sentinels: [], masterName: 'm' } }), RangeError);
  });
});

describe('ClusterFamily', () => {
  const options = { lazyConnect: true, clusterRetryStrategy: () => 60_000, redisOptions: { connectionName: 'nodelet-queue' } };

  it("duplicates as BullMQ asks (startup nodes kept, redisOptions overridden) and drops the duplicates with it; a dropped client does not connect again", async () => {
    const base = new ClusterFamily([{ host: '127.0.0.1', port: 1 }], options);
    const copy = base.duplicate(undefined, { redisOptions: { connectionName: 'nodelet:abc:w:worker' } });
    assert.equal(copy.options.redisOptions?.connectionName, 'nodelet:abc:w:worker');
    assert.equal(copy.options.clusterRetryStrategy, options.clusterRetryStrategy);
    base.dropAll();
    assert.equal(base.status, 'end');
    assert.equal(copy.status, 'end');
    await assert.rejects(copy.connect(), ConnectionDroppedError);
    const late = base.duplicate();
    assert.equal(late.status, 'end', 'a duplicate made after the drop is dropped at once');
  });

  it('ends a client caught between two reconnect attempts (ioredis would leave it disconnecting for good)', async () => {
    const client = new ClusterFamily([{ host: '127.0.0.1', port: 1 }], { ...options, lazyConnect: false });
    client.on('error', () => undefined);
    for (let i = 0; i < 100 && client.status !== 'reconnecting'; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(client.status, 'reconnecting');
    const pending = client.get('k');
    client.dropAll();
    assert.equal(client.status, 'end');
    await assert.rejects(pending);
    assert.equal(client.everyConnectionSettled(), true);
  });
});
