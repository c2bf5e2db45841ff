/**
 * The node's reconcile queue and how the agent reaches it: with `--redis-node-user`, as the node's
 * own Redis user (`nodelet-node-<node>`) with a password kept on the host, whose hash the Node
 * carries for `nodelet redis-users` to provision (controllers/queue/redis-acl.ts); otherwise with
 * what `--redis-url` says.
 */
import path from 'node:path';
import { createReconcileQueue, type ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import type { Logger } from 'pino';
import { ensureNodeRedisPassword, withRedisCredentials } from '../../controllers/queue/node-redis-password.js';
import { REDIS_PASSWORD_SHA256_ANNOTATION, nodeRedisUser, passwordSha256 } from '../../controllers/queue/redis-acl.js';
import type { AgentCore } from './core.js';

/** The queue, and the annotations the Node must carry for it to be reachable. */
export interface AgentQueue {
  readonly queue: ReconcileQueue;
  readonly nodeAnnotations: Readonly<Record<string, string>>;
}

/** Where the agent keeps its Redis password on the host. */
export function nodeRedisPasswordFile(rootDir: string): string {
  return path.join(rootDir, 'redis', 'password');
}

/** See this file's header. */
export async function buildQueue(core: AgentCore): Promise<AgentQueue> {
  const { settings, logger, metrics } = core;
  let redisUrl = settings.redisUrl;
  let nodeAnnotations: Record<string, string> = {};
  if (settings.redisNodeUser) {
    const password = await ensureNodeRedisPassword(nodeRedisPasswordFile(settings.rootDir));
    redisUrl = withRedisCredentials(settings.redisUrl, nodeRedisUser(settings.nodeName), password);
    nodeAnnotations = { [REDIS_PASSWORD_SHA256_ANNOTATION]: passwordSha256(password) };
  }
  const topology = { ...(settings.redisSentinel === undefined ? {} : { sentinel: settings.redisSentinel }), ...(settings.redisCluster === undefined ? {} : { cluster: settings.redisCluster }) };
  const queue = createReconcileQueue({ redisUrl, ...topology, nodeName: settings.nodeName, concurrency: settings.concurrency, logger, metrics: metrics.runs });
  // A scrape costs Redis what a health sample does: one command while no job changed.
  metrics.watchQueue({ counts: () => queue.sampleCounts() });
  return { queue, nodeAnnotations };
}

/** After the queue may have lost jobs (Redis restarted empty): every pod resynced and the runtime relisted at once. */
export function resyncOnQueueLoss(queue: ReconcileQueue, parts: { store: { resyncAll(): void }; pleg: { relistNow(): Promise<unknown> }; logger: Logger }): void {
  queue.onResync((cause) => {
    parts.logger.info({ cause }, 'queue may have lost jobs: resyncing every pod');
    parts.store.resyncAll();
    void parts.pleg.relistNow();
  });
}
