/**
 * A reconcile-queue instance in a process of its own, for tests that kill it: it starts a queue
 * on the given Redis, prefix and node, enqueues one UID, prints "running <uid>" when that UID's
 * run starts, and never finishes the run. The test then SIGKILLs the process, as an agent dies.
 *
 * Usage: node --import tsx doomed-agent.ts REDIS_URL PREFIX NODE_NAME UID [LOCK_MS]
 */
import { pino } from 'pino';
import { createReconcileQueue } from '../../../controllers/queue/reconcile-queue.js';

const [redisUrl, prefix, nodeName, uid, lockMs] = process.argv.slice(2);
if (redisUrl === undefined || prefix === undefined || nodeName === undefined || uid === undefined) {
  process.stderr.write('usage: doomed-agent.ts REDIS_URL PREFIX NODE_NAME UID [LOCK_MS]\n');
  process.exit(2);
}
const stall = lockMs === undefined ? {} : { stall: { lockDurationMs: Number(lockMs) } };
const queue = createReconcileQueue({ redisUrl, prefix, nodeName, concurrency: 1, logger: pino({ level: 'silent' }), ...stall });
await queue.start({
  reconcile: async (ref) => {
    process.stdout.write(`running ${ref.uid}\n`);
    // Hold the run (and its lock, renewed by the worker) until the test kills the process.
    await new Promise<void>((resolve) => setTimeout(resolve, 3_600_000));
    return {};
  },
});
await queue.enqueue({ uid, namespace: 'default', name: `pod-${uid}` }, 'created');
