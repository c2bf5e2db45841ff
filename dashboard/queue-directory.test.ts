import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { nodeOfQueueKey, scanQueueNodes } from './queue-directory.js';

describe('nodeOfQueueKey', () => {
  it('finds the node in any key of its reconcile queue', () => {
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-vm:meta', 'nodelet'), 'vm');
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-worker-1.example:abc.def:logs', 'nodelet'), 'worker-1.example');
    assert.equal(nodeOfQueueKey('custom:nodelet-reconcile-n2:events', 'custom'), 'n2');
  });

  it('ignores other prefixes, other queues and names Kubernetes would not allow', () => {
    assert.equal(nodeOfQueueKey('bull:nodelet-reconcile-vm:meta', 'nodelet'), undefined);
    assert.equal(nodeOfQueueKey('nodelet:other-queue:meta', 'nodelet'), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-:meta', 'nodelet'), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-Upper:meta', 'nodelet'), undefined);
    assert.equal(nodeOfQueueKey('nodelet:nodelet-reconcile-vm', 'nodelet'), undefined);
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
    assert.deepEqual(await scanQueueNodes(redis, 'nodelet'), ['a', 'b', 'c']);
    assert.deepEqual(patterns, ['nodelet:nodelet-reconcile-*', 'nodelet:nodelet-reconcile-*']);
  });
});
