/**
 * End to end on the test cluster's Redis: the dashboard next to the agent's queue and the queue of
 * a second, scripted node (the real `createReconcileQueue`, whose handler fails, retries, gives up
 * or succeeds on cue). Shows what the agent's healthy pods rarely do: a node appearing and
 * disappearing while the dashboard runs, failures with their errors, a terminal failure, and
 * `--allow-actions` retrying a failed job while cross-site writes stay refused.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { createReconcileQueue, type ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import type { PodKey } from '../../util/pod-key.js';
import { TerminalReconcileError } from '../../util/reconcile.js';
import { reconcileQueueName } from '../../controllers/queue/redis.js';
import { startDashboard } from '../../dashboard/server.js';
import type { RunningDashboard } from '../../dashboard/server.js';
import type { DashboardSettings } from '../../dashboard/settings.js';
import { NODE_NAME, eventually } from './helpers.js';

const REDIS_URL = process.env.REDIS_URL ?? '';
const NODE = `e2e-dash-${randomBytes(3).toString('hex')}`;
const QUEUE = reconcileQueueName(NODE);
const pod = (name: string): PodKey => ({ uid: `${randomBytes(8).toString('hex')}-${name}`, namespace: 'scripted', name });
const FLAKY = pod('flaky');
const DOOMED = pod('doomed');

interface BoardJob {
  readonly id: string;
  readonly name: string;
  readonly failedReason?: string;
  readonly data: { readonly uid?: string };
}
interface BoardQueues {
  readonly queues: readonly { readonly name: string; readonly readOnlyMode: boolean; readonly allowRetries: boolean; readonly jobs: readonly BoardJob[] }[];
}

describe('the dashboard over a scripted node’s queue', () => {
  const token = randomBytes(16).toString('hex');
  const logger = pino({ level: 'warn' });
  // The scripted failures are the point: the queue's own warnings about them are noise here.
  const queueLogger = pino({ level: 'silent' });
  const calls = new Map<string, number>();
  let queue: ReconcileQueue | undefined;
  let readOnly: RunningDashboard | undefined;
  let writable: RunningDashboard | undefined;

  const settings = (allowActions: boolean): DashboardSettings => ({
    listen: { host: '127.0.0.1', port: 0 },
    redisUrl: REDIS_URL,
    redisSentinel: undefined,
    redisCluster: undefined,
    prefix: 'nodelet',
    auth: { kind: 'token', token },
    allowActions,
    refreshIntervalMs: 500,
    logLevel: 'warn',
  });
  const get = (board: RunningDashboard, path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${board.url}${path}`, { redirect: 'manual', ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });
  const boardQueue = async (board: RunningDashboard): Promise<BoardQueues['queues'][number] | undefined> => {
    const res = await get(board, `/queues/api/queues?activeQueue=${QUEUE}&status=latest&page=1&jobsPerPage=50`);
    assert.equal(res.status, 200);
    return ((await res.json()) as BoardQueues).queues.find((q) => q.name === QUEUE);
  };

  before(async () => {
    assert.ok(REDIS_URL !== '', 'REDIS_URL is set by .cluster/env');
    // Started before the scripted node has a queue: it must find it on its own.
    readOnly = await startDashboard({ settings: settings(false), logger });
    writable = await startDashboard({ settings: settings(true), logger });
  });

  after(async () => {
    await queue?.close();
    await readOnly?.close();
    await writable?.close();
    const leftover = new Queue(QUEUE, { connection: { url: REDIS_URL }, prefix: 'nodelet', skipMetasUpdate: true });
    await leftover.obliterate({ force: true }).catch(() => undefined);
    await leftover.close();
  });

  it('finds the queue of a node that appears while it runs, next to the agent’s', async () => {
    queue = createReconcileQueue({ redisUrl: REDIS_URL, nodeName: NODE, concurrency: 2, logger: queueLogger, backoff: { initialMs: 100, maxMs: 400 } });
    await queue.start({
      reconcile: (ref, context) => {
        calls.set(ref.name, (calls.get(ref.name) ?? 0) + 1);
        if (ref.name === 'doomed') return Promise.reject(new TerminalReconcileError(`volume "data" has an unknown type (run ${calls.get(ref.name)})`));
        if (context.attempt <= 2) return Promise.reject(new Error(`sandbox not ready (attempt ${context.attempt})`));
        return Promise.resolve({});
      },
    });
    await queue.enqueue(FLAKY, 'pod added');
    await queue.enqueue(DOOMED, 'pod added');
    const listed = await eventually('the scripted node’s queue in bull-board', () => boardQueue(readOnly!), 15_000);
    assert.equal(listed.readOnlyMode, true);
    assert.equal(listed.allowRetries, false);
    const index = await (await get(readOnly!, '/')).text();
    assert.match(index, new RegExp(`<tr data-node="${NODE}">`));
    assert.match(index, new RegExp(`<tr data-node="${NODE_NAME}">`));
  });

  it('shows a pod that failed twice and then succeeded: each run with its attempt, error and outcome', async () => {
    const page = await eventually('flaky settled', async () => {
      const text = await (await get(readOnly!, `/pods/${FLAKY.uid}`)).text();
      return text.includes('badge b-settled') ? text : undefined;
    });
    const outcomes = [...page.matchAll(/data-outcome="(\w+)"/g)].map((m) => m[1]);
    assert.deepEqual(outcomes, ['success', 'error', 'error']);
    assert.match(page, /error \(attempt 2\)/);
    assert.match(page, /sandbox not ready \(attempt 1\)/);
    assert.match(page, /<h1>Pod scripted\/flaky<\/h1>/);
  });

  it('shows a terminal failure with its error, in the timeline and on the bull-board job', async () => {
    const page = await eventually('doomed failed', async () => {
      const text = await (await get(readOnly!, `/pods/${DOOMED.uid}`)).text();
      return text.includes('badge b-failed') ? text : undefined;
    });
    assert.match(page, /volume &quot;data&quot; has an unknown type/);
    assert.match(page, /failed terminally/);
    const job = (await boardQueue(readOnly!))?.jobs.find((j) => j.data.uid === DOOMED.uid);
    assert.ok(job);
    assert.match(job.failedReason ?? '', /terminal reconcile error: volume "data" has an unknown type/);
    assert.match(job.name, /^scripted\/doomed · failed terminally in \d+ ms$/);
  });

  it('retries a failed job only where actions are allowed, and never for a cross-site request', async () => {
    const job = (await boardQueue(writable!))?.jobs.find((j) => j.data.uid === DOOMED.uid);
    assert.ok(job);
    const path = `/queues/api/queues/${QUEUE}/${encodeURIComponent(job.id)}/retry`;
    assert.equal((await get(readOnly!, path, { method: 'PUT' })).status, 403);
    assert.equal((await get(writable!, path, { method: 'PUT', headers: { origin: 'http://elsewhere.example' } })).status, 403);
    assert.equal(calls.get('doomed'), 1);
    const retried = await get(writable!, path, { method: 'PUT' });
    assert.equal(retried.status, 204);
    await eventually('the retried run', () => Promise.resolve(calls.get('doomed') === 2 ? true : undefined), 15_000);
    const page = await eventually('two terminal runs on the timeline', async () => {
      const text = await (await get(readOnly!, `/pods/${DOOMED.uid}`)).text();
      return (text.match(/data-outcome="terminal"/g) ?? []).length === 2 ? text : undefined;
    });
    assert.match(page, /unknown type \(run 2\)/);
  });

  it('withdraws a node’s queue once its keys are gone', async () => {
    await queue?.close();
    queue = undefined;
    const doomed = new Queue(QUEUE, { connection: { url: REDIS_URL }, prefix: 'nodelet', skipMetasUpdate: true });
    await doomed.obliterate({ force: true });
    await doomed.close();
    await eventually('the queue gone from bull-board', async () => ((await boardQueue(readOnly!)) === undefined ? true : undefined), 15_000);
    const index = await (await get(readOnly!, '/')).text();
    assert.doesNotMatch(index, new RegExp(`data-node="${NODE}"`));
  });
});
