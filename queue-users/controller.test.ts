import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { REDIS_PASSWORD_SHA256_ANNOTATION, passwordSha256 } from '../controllers/queue/redis-acl.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { QueueUsersController } from './controller.js';

/** A Redis stand-in that records ACL calls and can fail them. */
class RecordingRedis extends EventEmitter {
  readonly calls: string[] = [];
  failing = 0;
  call(...args: string[]): Promise<unknown> {
    if (this.failing > 0) {
      this.failing -= 1;
      return Promise.reject(new Error('redis down'));
    }
    this.calls.push(args.slice(0, 3).join(' '));
    return Promise.resolve(args[1] === 'USERS' ? ['default'] : 'OK');
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

function rig() {
  const clock = createFakeClock(0);
  const redis = new RecordingRedis();
  let nodes: V1Node[] = [{ metadata: { name: 'a', annotations: { [REDIS_PASSWORD_SHA256_ANNOTATION]: passwordSha256('pw') } } }];
  const listeners: (() => void)[] = [];
  const controller = new QueueUsersController({
    nodes: { list: () => nodes, onChange: (l) => listeners.push(l) },
    redis: redis as unknown as Redis,
    dashboard: undefined,
    clock,
    logger: pino({ level: 'silent' }),
    resyncMs: 60_000,
    batchMs: 200,
    backoff: { initialMs: 1000, maxMs: 8000 },
  });
  return { clock, redis, controller, setNodes: (n: V1Node[]) => { nodes = n; for (const l of listeners) l(); } };
}

describe('QueueUsersController', () => {
  it('applies at start, after a batch of Node changes, when Redis reconnects and every resync', async () => {
    const { clock, redis, controller, setNodes } = rig();
    controller.start();
    await clock.advance(0);
    await settle();
    assert.deepEqual(redis.calls, ['ACL USERS', 'ACL SETUSER nodelet-node-a']);
    setNodes([]);
    setNodes([{ metadata: { name: 'b', annotations: { [REDIS_PASSWORD_SHA256_ANNOTATION]: passwordSha256('x') } } }]);
    await clock.advance(199);
    await settle();
    assert.equal(redis.calls.length, 2, 'changes wait for their batch');
    await clock.advance(1);
    await settle();
    assert.deepEqual(redis.calls.slice(2), ['ACL USERS', 'ACL SETUSER nodelet-node-b'], 'one pass for both changes');
    redis.emit('ready');
    await clock.advance(0);
    await settle();
    assert.equal(redis.calls.length, 6, 'a reconnected Redis gets every user again');
    await clock.advance(60_000);
    await settle();
    assert.equal(redis.calls.length, 8, 'and so does every resync');
    await controller.stop();
  });

  it('retries a failed pass with backoff', async () => {
    const { clock, redis, controller } = rig();
    redis.failing = 2;
    controller.start();
    await clock.advance(0);
    await settle();
    assert.equal(redis.calls.length, 0);
    await clock.advance(1000);
    await settle();
    assert.equal(redis.calls.length, 0, 'second failure');
    await clock.advance(1999);
    await settle();
    assert.equal(redis.calls.length, 0);
    await clock.advance(1);
    await settle();
    assert.deepEqual(redis.calls, ['ACL USERS', 'ACL SETUSER nodelet-node-a']);
    await controller.stop();
  });
});
