import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { RedisClient } from '../controllers/queue/redis.js';
import { systemClock } from '../util/clock.js';
import { clusterPrimaries, nodeOfQueueKey, QueueDirectory, queueKeyPattern, scanEveryPrimary, scanQueueNodes, type ClusterView } from './queue-directory.js';

const PLAIN = { prefix: 'nodelet', hashTagged: false };
const TAGGED = { prefix: 'nodelet', hashTagged: true };

describe('nodeOfQueueKey', () => {
  it('finds the node in any key of its reconcile queue', () => {
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-vm:meta', PLAIN), 'vm');
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-worker-1.example:abc.def:logs', PLAIN), 'worker-1.example');
    assert.equal(nodeOfQueueKey('custom:nodelet-reconcile-n2:events', { prefix: 'custom', hashTagged: false }), 'n2');
  });

  it('ignores other prefixes, other queues and names Kubernetes would not allow', () => {
    assert.equal(nodeOfQueueKey('bull:nodelet-reconcile-vm:meta', PLAIN), undefined);
    assert.equal(nodeOfQueueKey('nodelet:other-queue:meta', PLAIN), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-:meta', PLAIN), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-Upper:meta', PLAIN), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-vm', PLAIN), undefined);
  });

  it("on a cluster, reads the node from the hash tag, which must name the queue's node too", () => {
    assert.equal(nodeOfQueueKey('{nodelet:vm}:nodelet-reconcile-vm:meta', TAGGED), 'vm');
    assert.equal(nodeOfQueueKey('{nodelet:worker-1.example}:nodelet-reconcile-worker-1.example:j.1:logs', TAGGED), 'worker-1.example');
    assert.equal(nodeOfQueueKey('{nodelet:vm}:nodelet-reconcile-other:meta', TAGGED), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-vm:meta', TAGGED), undefined, 'an untagged key is not a queue the cluster agents write');
    assert.equal(nodeOfQueueKey('{nodelet:}:nodelet-reconcile-:meta', TAGGED), undefined);
    assert.equal(nodeOfQueueKey('{bull:vm}:nodelet-reconcile-vm:meta', TAGGED), undefined);
    assert.equal(nodeOfQueueKey('{nodelet:vm}:nodelet-reconcile-vm:meta', PLAIN), undefined);
  });

  it('scans for the layout the agents write', () => {
    assert.equal(queueKeyPattern(PLAIN), 'nodelet:nodelet-reconcile-*');
    assert.equal(queueKeyPattern(TAGGED), '{nodelet:*}:nodelet-reconcile-*');
  });
});

describe('scanQueueNodes', () => {
  it('walks every SCAN page and returns each node once, sorted', async () => {
    const pages: Record<string, [string, string[]]> = {
      '0': ['17', ['nodelet:nodelet-reconcile-b:meta', 'nodelet:nodelet-reconcile-b:j1', 'nodelet:nodelet-reconcile-a:events']],
      '17': ['0', ['nodelet:nodelet-reconcile-c:id', 'nodelet:nodelet-reconcile-a:j2:logs']],
    };
    const patterns: string[] = [];
    const redis = {
      scan: (cursor: string, _match: string, pattern: string): Promise<[string, string[]]> => {
        patterns.push(pattern);
        return Promise.resolve(pages[cursor]!);
      },
    } as unknown as Pick<Redis, 'scan'>;
    assert.deepEqual(await scanQueueNodes(redis, PLAIN), ['a', 'b', 'c']);
    assert.deepEqual(patterns, ['nodelet:nodelet-reconcile-*', 'nodelet:nodelet-reconcile-*']);
  });
});

/** A cluster client's slot map (owner of each slot range) and pool (the primaries it holds a client for). */
function clusterView(ranges: readonly (readonly [number, number, string])[], pool: readonly string[], afterRefresh?: readonly string[]): ClusterView & { refreshes: number } {
  const slots: string[][] = [];
  for (const [from, to, owner] of ranges) for (let s = from; s <= to; s += 1) slots[s] = [owner];
  let current = pool;
  const view = {
    refreshes: 0,
    slots,
    nodes: () => current.map((key) => ({ options: { host: key.split(':')[0], port: Number(key.split(':')[1]) } }) as unknown as Redis),
    refreshSlotsCache: (callback?: () => void) => {
      view.refreshes += 1;
      current = afterRefresh ?? current;
      callback?.();
    },
  };
  return view;
}

describe('clusterPrimaries', () => {
  const THREE: [number, number, string][] = [[0, 5460, '127.0.0.1:7101'], [5461, 10922, '127.0.0.1:7102'], [10923, 16383, '127.0.0.1:7103']];

  it('scans each primary that owns slots once, and is complete when every slot is owned by a primary it holds', async () => {
    const view = clusterView(THREE, ['127.0.0.1:7101', '127.0.0.1:7102', '127.0.0.1:7103']);
    const { primaries, complete } = await clusterPrimaries(view);
    assert.equal(primaries.length, 3);
    assert.equal(complete, true);
    assert.equal(view.refreshes, 0);
  });

  it('refreshes the slot map when an owner is missing from the pool, and is partial when it is still missing', async () => {
    const back = clusterView(THREE, ['127.0.0.1:7101', '127.0.0.1:7103'], ['127.0.0.1:7101', '127.0.0.1:7102', '127.0.0.1:7103']);
    assert.deepEqual({ n: (await clusterPrimaries(back)).primaries.length, refreshes: back.refreshes }, { n: 3, refreshes: 1 });
    const gone = clusterView(THREE, ['127.0.0.1:7101', '127.0.0.1:7103']);
    const partial = await clusterPrimaries(gone);
    assert.equal(partial.primaries.length, 2);
    assert.equal(partial.complete, false);
  });

  it('is partial with an unowned slot, or before the client knows the slot map', async () => {
    const holes = clusterView([[0, 5460, '127.0.0.1:7101'], [5462, 16383, '127.0.0.1:7102']], ['127.0.0.1:7101', '127.0.0.1:7102']);
    assert.equal((await clusterPrimaries(holes)).complete, false);
    const empty = clusterView([], []);
    assert.equal((await clusterPrimaries(empty)).complete, false);
  });
});

describe('a scan before the cluster client knows any primary', () => {
  const connecting = { ...clusterView([], []), isCluster: true } as unknown as RedisClient;

  it('asks no primary, and the directory counts it as failed (retried within a second) rather than as a scan that found nothing', async () => {
    const scan = await scanEveryPrimary(connecting, TAGGED);
    assert.deepEqual(scan, { nodes: [], complete: false, primaries: 0 });
    const directory = new QueueDirectory({
      redis: connecting, layout: TAGGED, intervalMs: 600_000, clock: systemClock, logger: pino({ level: 'silent' }),
      listener: { added: () => undefined, removed: () => undefined },
    });
    try {
      assert.equal(await directory.refresh(), false);
    } finally {
      await directory.stop();
    }
  });
});
