import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { liveWorkerNames, namedWorkerPrefix, orphanedJobs } from './orphan-recovery.js';

void describe('orphanedJobs', () => {
  const live = new Set(['host:2:bbbb']);
  void it('names the jobs of named workers that are neither connected nor this instance, and never a job without an ID', () => {
    const active = [
      { id: 'dead', processedBy: 'host:1:aaaa' },
      { id: 'alive', processedBy: 'host:2:bbbb' },
      { id: 'mine', processedBy: 'host:3:cccc' },
      { id: 'unnamed' },
      { id: 'empty', processedBy: '' },
      { processedBy: 'host:4:dddd' },
    ];
    assert.deepEqual(orphanedJobs(active, live, 'host:3:cccc'), [{ job: active[0], id: 'dead', deadWorker: 'host:1:aaaa' }]);
  });
  void it('names none when the connected workers are unknown', () => {
    assert.deepEqual(orphanedJobs([{ id: 'dead', processedBy: 'host:1:aaaa' }], undefined, 'me'), []);
  });
});

void describe('liveWorkerNames', () => {
  const prefix = namedWorkerPrefix('nodelet', 'nodelet-reconcile-n1');
  void it('builds the client-name prefix BullMQ gives a named worker of the queue', () => {
    assert.equal(prefix, `nodelet:${Buffer.from('nodelet-reconcile-n1').toString('base64')}:w:`);
  });
  void it('reads the names of named workers and skips unnamed ones', () => {
    const clients = [{ rawname: `${prefix}host:1:aaaa`, addr: '127.0.0.1:1' }, { rawname: prefix.slice(0, -3) }, { rawname: `${prefix}a:w:b` }];
    assert.deepEqual(liveWorkerNames(clients, prefix), new Set(['host:1:aaaa', 'a:w:b']));
  });
  void it('knows nothing when an entry has no raw name (a Redis without CLIENT LIST)', () => {
    assert.equal(liveWorkerNames([{ name: 'GCP does not support client list' }], prefix), undefined);
  });
  void it('knows that no worker is connected from an empty list', () => {
    assert.deepEqual(liveWorkerNames([], prefix), new Set());
  });
});
