/**
 * A reconcile-queue instance on a Redis Cluster in a process of its own, for tests about the
 * process exiting: it starts the queue of NODE_NAME on the cluster (`--redis-cluster-nodes` as the
 * agent takes it), prints "started", and on SIGTERM closes the queue, prints "closed" and leaves
 * the process to exit by itself, as the agent's main does: anything the queue left running (a
 * connection, a timer) keeps it alive.
 *
 * Usage: node --import tsx cluster-queue-agent.ts HOST:PORT,... NODE_NAME
 */
import { pino } from 'pino';
import { createReconcileQueue } from '../../../controllers/queue/reconcile-queue.js';
import { clusterSettings } from '../../../controllers/queue/redis-cluster.js';

const [nodesText, nodeName] = process.argv.slice(2);
const cluster = clusterSettings(nodesText ?? '');
if (cluster === undefined || nodeName === undefined) {
  process.stderr.write('usage: cluster-queue-agent.ts HOST:PORT,... NODE_NAME\n');
  process.exit(2);
}
const queue = createReconcileQueue({ redisUrl: 'redis://ignored', cluster, nodeName, concurrency: 2, logger: pino({ level: 'silent' }), shutdownTimeoutMs: 2_000, redisStepTimeoutMs: 2_000 });
await queue.start({ reconcile: () => Promise.resolve({}) });
process.stdout.write('started\n');
process.once('SIGTERM', () => {
  void queue.close().then(() => process.stdout.write('closed\n'));
});
