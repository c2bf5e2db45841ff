import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { connectedClients, liveWorkerNames, namedWorkerPrefix, orphanedJobs, recoverOrphanedJobs, type OrphanRecoveryDeps } from './orphan-recovery.js';
import type { RedisClient } from './redis.js';

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

void describe('connectedClients', () => {
  const answering = (reply: () => Promise<string>): RedisClient => ({ client: reply }) as unknown as RedisClient;
  void it("reads CLIENT LIST's lines into records whose rawname is the client's name", async () => {
    const list = 'id=3 addr=127.0.0.1:50 laddr=127.0.0.1:6379 name=nodelet-queue cmd=evalsha\nid=4 addr=127.0.0.1:51 name= cmd=bzpopmin\n';
    const clients = await connectedClients(answering(() => Promise.resolve(list)));
    assert.deepEqual(clients.map((c) => [c.id, c.rawname, c.cmd]), [['3', 'nodelet-queue', 'evalsha'], ['4', '', 'bzpopmin']]);
  });
  void it('answers an entry without rawname (nobody can be shown dead) when Redis has no CLIENT LIST, and rethrows other errors', async () => {
    const clients = await connectedClients(answering(() => Promise.reject(new Error("ERR unknown command 'client', with args beginning with: 'LIST'"))));
    assert.equal(liveWorkerNames(clients, 'p:'), undefined);
    await assert.rejects(connectedClients(answering(() => Promise.reject(new Error('Connection is closed.')))), /Connection is closed/);
  });
});

void describe('recoverOrphanedJobs', () => {
  /** A queue with these active jobs and a Redis whose client listings are counted. */
  function deps(active: readonly { id: string; processedBy?: string }[]): { deps: OrphanRecoveryDeps; listings: () => number } {
    let listings = 0;
    const name = 'nodelet-reconcile-n1';
    const list = `id=7 addr=127.0.0.1:1 name=${namedWorkerPrefix('nodelet', name)}host:2:bbbb cmd=bzpopmin\n`;
    const queue = { name, getActive: () => Promise.resolve(active) } as unknown as OrphanRecoveryDeps['queue'];
    const redis = { client: () => { listings += 1; return Promise.resolve(list); } } as unknown as RedisClient;
    return { deps: { queue, redis, keyPrefix: 'nodelet', self: 'host:3:cccc', maxRecoveries: 3, claimTtlMs: 15_000, logger: pino({ level: 'silent' }) }, listings: () => listings };
  }

  void it("does not list Redis' clients when no active job is held by another named worker (a fleet starting together)", async () => {
    for (const active of [[], [{ id: 'mine', processedBy: 'host:3:cccc' }], [{ id: 'unnamed' }]]) {
      const d = deps(active);
      assert.deepEqual(await recoverOrphanedJobs(d.deps), []);
      assert.equal(d.listings(), 0, JSON.stringify(active));
    }
  });

  void it("lists the clients once when another worker's job may be an orphan, and leaves a live worker's job alone", async () => {
    const d = deps([{ id: 'alive', processedBy: 'host:2:bbbb' }]);
    assert.deepEqual(await recoverOrphanedJobs(d.deps), []);
    assert.equal(d.listings(), 1);
  });
});
