import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { DeletionGraceMemory } from './deletion-grace.js';

const deleted = (uid: string, grace?: number): V1Pod => ({ metadata: { uid, name: uid, namespace: 'ns', deletionTimestamp: new Date(0), ...(grace === undefined ? {} : { deletionGracePeriodSeconds: grace }) } });

describe('DeletionGraceMemory', () => {
  it('remembers the final deletion grace period of a removed pod, 0 included', () => {
    const memory = new DeletionGraceMemory();
    memory.record(deleted('forced', 0));
    memory.record(deleted('graceful', 30));
    assert.equal(memory.of('forced'), 0);
    assert.equal(memory.of('graceful'), 30);
    assert.equal(memory.of('unknown'), undefined);
  });

  it('records nothing for a final object without a deletion grace period or a UID', () => {
    const memory = new DeletionGraceMemory();
    memory.record(deleted('plain'));
    memory.record(deleted('', 0));
    memory.record(deleted('negative', -1));
    assert.equal(memory.size, 0);
  });

  it('forgets the oldest entries beyond its capacity', () => {
    const memory = new DeletionGraceMemory(2);
    memory.record(deleted('a', 1));
    memory.record(deleted('b', 2));
    memory.record(deleted('a', 3)); // a is now the newest
    memory.record(deleted('c', 4));
    assert.deepEqual([memory.of('a'), memory.of('b'), memory.of('c')], [3, undefined, 4]);
  });
});
