/**
 * One node's Redis credentials reach only its own queue: a redis-server of this test's own (Debian's,
 * as the image's) with an admin password, each node's user made by `nodelet redis-users`' controller
 * (queue-users/) from the password hash on its Node, and the agent's real ReconcileQueue of two
 * nodes running jobs with their own credentials (cmd/assembly/queue.ts's URL). Then, with node A's credentials, every read, write, delete, lock,
 * script, listing and admin command against node B's queue or the server is refused (NOPERM), and a
 * client without credentials is refused everything (NOAUTH). The matrix is printed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, ReplyError } from 'ioredis';
import type { ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import { createReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import { DASHBOARD_USER, REDIS_PASSWORD_SHA256_ANNOTATION, nodeRedisUser, passwordSha256 } from '../../controllers/queue/redis-acl.js';
import { QueueUsersController } from '../../queue-users/controller.js';
import { systemClock } from '../../util/clock.js';
import type { V1Node } from '@kubernetes/client-node';
import { Queue } from 'bullmq';
import { reconcileQueueName } from '../../controllers/queue/redis.js';
import { withRedisCredentials } from '../../controllers/queue/node-redis-password.js';
import { eventually, logger } from './helpers/reconcile-queue-fixture.js';
import { freeLoopbackPort } from './helpers/free-port.js';

const ADMIN = randomBytes(16).toString('hex');
const NODE_A = `iso-a-${randomBytes(3).toString('hex')}`;
const NODE_B = `iso-b-${randomBytes(3).toString('hex')}`;
const PASSWORDS = { [NODE_A]: randomBytes(32).toString('hex'), [NODE_B]: randomBytes(32).toString('hex') };
const DASHBOARD_PASSWORD = randomBytes(16).toString('hex');
const NODE_C = `iso-c-${randomBytes(3).toString('hex')}`;

/** A Node as the agent registers it with `--redis-node-user` (or, for `hash` undefined, without). */
function nodeWith(name: string, hash: string | undefined): V1Node {
  return { metadata: { name, ...(hash === undefined ? {} : { annotations: { [REDIS_PASSWORD_SHA256_ANNOTATION]: hash } }) } };
}

/** What Redis answered: ok, or the first word of its error (NOPERM, NOAUTH, ...). */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    // A refusal inside a script comes back as ERR naming the refusal: keep both words.
    if (error instanceof ReplyError) {
      const message = (error as Error).message;
      const word = message.split(' ')[0] ?? 'ERR';
      return word === 'ERR' && /NOPERM|can't access|can't run/.test(message) ? 'ERR+NOPERM' : word;
    }
    throw error;
  }
}

describe('Redis isolation: one node\'s credentials reach only its own queue', { timeout: 120_000 }, () => {
  let server: ChildProcess;
  let url = '';
  let admin: Redis;
  const queues: ReconcileQueue[] = [];
  const clients: Redis[] = [];
  const runs = new Map<string, number>();
  let nodes: V1Node[] = [];
  let provisioner: QueueUsersController;

  before(async () => {
    const port = await freeLoopbackPort();
    server = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--requirepass', ADMIN, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
    url = `redis://127.0.0.1:${port}`;
    admin = new Redis(url, { password: ADMIN, maxRetriesPerRequest: 3, lazyConnect: true });
    // Refused connects are this test's subject (and the server's start is waited for): no unhandled events.
    admin.on('error', () => undefined);
    await eventually(async () => (await admin.connect().then(() => true, () => false)), 'redis-server up');
    // What the API server holds: A and B with their hashes, C without one (no --redis-node-user).
    nodes = [nodeWith(NODE_A, passwordSha256(PASSWORDS[NODE_A] ?? '')), nodeWith(NODE_B, passwordSha256(PASSWORDS[NODE_B] ?? '')), nodeWith(NODE_C, undefined)];
    provisioner = new QueueUsersController({ nodes: { list: () => nodes, onChange: () => undefined }, redis: admin, dashboard: { passwordHash: passwordSha256(DASHBOARD_PASSWORD), allowActions: false }, clock: systemClock, logger });
    await provisioner.applyNow();
    // Each node's agent queue, with its own credentials only, running real jobs.
    for (const node of [NODE_A, NODE_B]) {
      const queue = createReconcileQueue({ redisUrl: withRedisCredentials(url, nodeRedisUser(node), PASSWORDS[node] ?? ''), nodeName: node, concurrency: 2, logger, shutdownTimeoutMs: 2000 });
      queues.push(queue);
      await queue.start({ reconcile: () => { runs.set(node, (runs.get(node) ?? 0) + 1); return Promise.resolve({}); } });
      for (let i = 0; i < 10; i += 1) await queue.enqueue({ uid: `uid-${i}`, namespace: 'ns', name: `pod-${i}` }, 'test');
    }
    await eventually(() => (runs.get(NODE_A) ?? 0) >= 10 && (runs.get(NODE_B) ?? 0) >= 10, 'both queues ran their jobs', 30_000);
    // The idle paths under the node's user too: the resync's look-up of its deduplication keys and
    // the health sample's sentinel refresh (a refusal would reject).
    for (const queue of queues) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => queue.resync({ uid: `uid-${i}`, namespace: 'ns', name: `pod-${i}` }, 'resync')));
      await queue.sampleCounts();
    }
    await eventually(() => (runs.get(NODE_A) ?? 0) >= 20 && (runs.get(NODE_B) ?? 0) >= 20, 'both queues resynced their pods', 30_000);
  });

  after(async () => {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    for (const c of [...clients, admin]) c.disconnect();
    server.kill('SIGTERM');
    await sleep(100);
  });

  it('provisions a user per Node with a hash and one for the dashboard, and none for a Node without a hash', async () => {
    const users = (await admin.call('ACL', 'USERS')) as string[];
    assert.deepEqual(users.filter((u) => u !== 'default').sort(), [DASHBOARD_USER, nodeRedisUser(NODE_A), nodeRedisUser(NODE_B)].sort());
  });

  it("lets the dashboard's user read every node's queue and write none", async () => {
    const connection = new Redis(url, { username: DASHBOARD_USER, password: DASHBOARD_PASSWORD, maxRetriesPerRequest: 1 });
    clients.push(connection);
    for (const node of [NODE_A, NODE_B]) {
      const queue = new Queue(reconcileQueueName(node), { connection, prefix: 'nodelet' });
      const counts = await queue.getJobCounts('completed');
      assert.ok((counts.completed ?? 0) >= 1, `the dashboard reads ${node}'s completed jobs`);
      assert.equal(await outcome(() => queue.add('reconcile', { uid: 'x', namespace: 'n', name: 'p', reason: 'planted' })), 'ERR+NOPERM', 'the add script may not write');
      await queue.close();
    }
  });

  it("runs each node's queue with its own user, and refuses node A everything of node B's and the server's", async () => {
    assert.ok((runs.get(NODE_A) ?? 0) >= 10 && (runs.get(NODE_B) ?? 0) >= 10);
    const a = new Redis(url, { username: nodeRedisUser(NODE_A), password: PASSWORDS[NODE_A], maxRetriesPerRequest: 1 });
    const anonymous = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    anonymous.on('error', () => undefined);
    clients.push(a, anonymous);
    const ownKey = `nodelet:${reconcileQueueName(NODE_A)}:meta`;
    const bKey = (name: string): string => `nodelet:${reconcileQueueName(NODE_B)}:${name}`;
    const [bJob] = (await admin.zrange(bKey('completed'), 0, 0));
    assert.ok(bJob !== undefined, "node B's queue has a completed job");
    const cases: { action: string; expect: string; run: () => Promise<unknown> }[] = [
      { action: "read its own queue's keys", expect: 'ok', run: () => a.hgetall(ownKey) },
      { action: "read a job of node B's", expect: 'NOPERM', run: () => a.hgetall(bKey(bJob)) },
      { action: "write node B's waiting list", expect: 'NOPERM', run: () => a.lpush(bKey('wait'), 'planted') },
      { action: "delete node B's job", expect: 'NOPERM', run: () => a.del(bKey(bJob)) },
      { action: "lock node B's job", expect: 'NOPERM', run: () => a.set(`${bKey(bJob)}:lock`, 'mine', 'PX', 60_000, 'NX') },
      { action: "plant a deduplication key in node B's queue", expect: 'NOPERM', run: () => a.set(bKey('de:uid-1'), 'planted') },
      { action: "delete node B's keys from a script", expect: 'NOPERM', run: () => a.eval("return redis.call('DEL', KEYS[1])", 1, bKey('meta')) },
      { action: "reach node B's keys from a script that names none", expect: 'ERR+NOPERM', run: () => a.eval(`return redis.call('DEL', '${bKey('meta')}')`, 0) },
      { action: 'FLUSHALL', expect: 'NOPERM', run: () => a.flushall() },
      { action: 'CONFIG GET', expect: 'NOPERM', run: () => a.config('GET', 'requirepass') },
      { action: 'KEYS *', expect: 'NOPERM', run: () => a.keys('*') },
      { action: 'SCAN (key names of every queue)', expect: 'NOPERM', run: () => a.scan(0) },
      { action: 'ACL SETUSER (give itself more)', expect: 'NOPERM', run: () => a.call('ACL', 'SETUSER', nodeRedisUser(NODE_A), '~*') },
      { action: 'PUBLISH', expect: 'NOPERM', run: () => a.publish('anything', 'x') },
      { action: 'without credentials: PING', expect: 'NOAUTH', run: async () => { await anonymous.connect().catch(() => undefined); return anonymous.ping(); } },
      { action: 'with node B\'s user and a wrong password', expect: 'WRONGPASS', run: () => a.call('AUTH', nodeRedisUser(NODE_B), 'guess') },
    ];
    const rows: { action: string; expect: string; got: string }[] = [];
    for (const c of cases) rows.push({ action: c.action, expect: c.expect, got: await outcome(c.run) });
    const width = Math.max(...rows.map((r) => r.action.length));
    console.log(`\nwith node A's Redis credentials (user ${nodeRedisUser(NODE_A)}):\n${rows.map((r) => `  ${r.action.padEnd(width)}  ${r.expect.padEnd(9)}  ${r.got.padEnd(9)}  ${r.got === r.expect ? 'ok' : 'MISMATCH'}`).join('\n')}`);
    assert.deepEqual(rows.filter((r) => r.got !== r.expect), []);
    // Nothing of B's changed: its job is still there.
    assert.equal(await admin.exists(bKey(bJob)), 1);
    assert.equal(await admin.exists(bKey('de:uid-1')), 0);
  });

  it("removes a node's user once its Node is gone, and its credentials stop working", async () => {
    nodes = nodes.filter((n) => n.metadata?.name !== NODE_B);
    await provisioner.applyNow();
    assert.equal(((await admin.call('ACL', 'USERS')) as string[]).includes(nodeRedisUser(NODE_B)), false);
    // No ready check (INFO needs a user): the one command sent is the AUTH under test.
    const b = new Redis(url, { maxRetriesPerRequest: 1, enableReadyCheck: false });
    b.on('error', () => undefined);
    clients.push(b);
    assert.equal(await outcome(() => b.call('AUTH', nodeRedisUser(NODE_B), PASSWORDS[NODE_B] ?? '')), 'WRONGPASS');
  });
});
