import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../controllers/queue/redis.js';
import { namedWorkerPrefix, queueClientName } from '../controllers/queue/orphan-recovery.js';
import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { ClientListing } from './queue-workers.js';

const queue = (prefix: string, name: string): Queue => ({ name, opts: { prefix } }) as unknown as Queue;

/** A single Redis whose CLIENT LIST answers `lines`; counts the listings. */
function redisListing(lines: readonly string[] | Error): { redis: RedisClient; listings: () => number } {
  let listings = 0;
  const client = (): Promise<string> => {
    listings += 1;
    return lines instanceof Error ? Promise.reject(lines) : Promise.resolve(lines.map((l, i) => `id=${i} addr=127.0.0.1:${i} ${l} cmd=bzpopmin`).join('\n'));
  };
  return { redis: { client } as unknown as RedisClient, listings: () => listings };
}

/** A clock standing at `now.ms` (timers from the system clock: the listing sets none). */
function clockAt(now: { ms: number }): Clock {
  return { ...systemClock, now: () => now.ms };
}

void describe('ClientListing', () => {
  const a = queue('nodelet', 'nodelet-reconcile-a');
  const b = queue('{nodelet:b}', 'nodelet-reconcile-b');
  const c = queue('nodelet', 'nodelet-reconcile-c');

  void it("counts each queue's named and unnamed workers from one listing for all the queues, and no other client", async () => {
    const { redis, listings } = redisListing([
      `name=${namedWorkerPrefix('nodelet', a.name)}host:1:aaaa`,
      `name=${namedWorkerPrefix('nodelet', a.name)}w:2:bbbb`,
      `name=${queueClientName('nodelet', a.name)}`,
      `name=${namedWorkerPrefix('{nodelet:b}', b.name)}host:3:cccc`,
      'name=nodelet-queue',
      'name=nodelet-dashboard',
      'name=',
      `name=${queueClientName('nodelet', 'nodelet-reconcile-gone')}:w:host:4:dddd`,
    ]);
    const listing = new ClientListing(redis, clockAt({ ms: 0 }));
    const [workers, ofA] = await Promise.all([listing.workersPerQueue([a, b, c]), listing.workersByQueue([a])]);
    assert.deepEqual(workers, new Map([[a.name, 3], [b.name, 1], [c.name, 0]]));
    assert.deepEqual(ofA?.get(a.name)?.map((w) => [w.name, w.rawname]), [
      [a.name, `${namedWorkerPrefix('nodelet', a.name)}host:1:aaaa`],
      [a.name, `${namedWorkerPrefix('nodelet', a.name)}w:2:bbbb`],
      [a.name, queueClientName('nodelet', a.name)],
    ], "BullMQ's records: name the queue's, rawname the connection's");
    assert.equal(listings(), 1, 'one listing for every queue and both askers');
  });

  void it('lists again only once the listing is older than its maximum age', async () => {
    const { redis, listings } = redisListing([`name=${namedWorkerPrefix('nodelet', a.name)}host:1:aaaa`]);
    const now = { ms: 1_000 };
    const listing = new ClientListing(redis, clockAt(now), 2_000);
    await listing.workersPerQueue([a]);
    now.ms = 3_000;
    await listing.workersPerQueue([a]);
    assert.equal(listings(), 1);
    now.ms = 3_001;
    await listing.workersPerQueue([a]);
    assert.equal(listings(), 2);
  });

  void it('answers unknown when Redis cannot list its clients', async () => {
    const { redis } = redisListing(new Error("ERR unknown command 'client'"));
    assert.equal(await new ClientListing(redis, clockAt({ ms: 0 })).workersPerQueue([a]), undefined);
  });
});
