/**
 * `nodelet redis-users`: keeps the Redis users of the nodes' queues (controller.ts), run next to the
 * chart's Redis with its admin password, until SIGTERM or SIGINT. Returns the process exit code
 * (2 for bad flags, 1 when there is no API server to talk to).
 */
import type { V1Node, V1NodeList } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { passwordSha256 } from '../controllers/queue/redis-acl.js';
import { connectCommandKube, type KubeClient } from '../kube/client.js';
import { ListWatchInformer } from '../kube/informer.js';
import { InformerRestarts } from '../kube/informer-restarts.js';
import { systemClock, type Clock } from '../util/clock.js';
import { formatUsage, LOG_LEVELS, oneOf, parseFlags, settingsOrExitCode, type FlagSpecs } from '../util/flags.js';
import { waitForShutdownSignal } from '../util/shutdown-signal.js';
import { QueueUsersController, type NodeSource } from './controller.js';

const FLAGS = {
  kubeconfig: { type: 'string', value: 'PATH', env: 'KUBECONFIG', defaultText: 'in-cluster config', description: 'kubeconfig to reach the API server (Nodes are read)' },
  'redis-url': { type: 'string', value: 'URL', env: 'REDIS_URL', default: 'redis://127.0.0.1:6379', description: "Redis, with the admin's credentials (redis://:<password>@host:port)" },
  'dashboard-allow-actions': { type: 'boolean', description: "let the dashboard's user write (retries, cleans), as the dashboard's --allow-actions" },
  'log-level': { type: 'string', value: 'LEVEL', env: 'LOG_LEVEL', default: 'info', description: 'trace|debug|info|warn|error' },
} as const satisfies FlagSpecs;

/** The usage text of `nodelet redis-users`. */
export const REDIS_USERS_USAGE = formatUsage(FLAGS, {
  synopsis: 'nodelet redis-users [flags]',
  summary: `Keeps one Redis ACL user per node (nodelet-node-<node>), confined to that node's queue, with
the password hash the node's agent put on its Node (--redis-node-user), and the dashboard's user
(password from NODELET_DASHBOARD_REDIS_PASSWORD, none without it). Removes the users of Nodes gone.`,
});

/** What the command runs with. */
export interface RedisUsersSettings {
  readonly kubeconfig: string | undefined;
  readonly redisUrl: string;
  readonly dashboardPassword: string | undefined;
  readonly dashboardAllowActions: boolean;
  readonly logLevel: string;
}

/** Parses flags and environment; throws FlagError on bad input. */
export function parseRedisUsersSettings(argv: readonly string[], env: NodeJS.ProcessEnv): RedisUsersSettings | 'help' {
  const values = parseFlags(FLAGS, { argv, env });
  if (values === 'help') return 'help';
  const kubeconfig = values.kubeconfig ?? '';
  const dashboardPassword = env.NODELET_DASHBOARD_REDIS_PASSWORD ?? '';
  return {
    kubeconfig: kubeconfig === '' ? undefined : kubeconfig,
    redisUrl: values['redis-url'],
    dashboardPassword: dashboardPassword === '' ? undefined : dashboardPassword,
    dashboardAllowActions: values['dashboard-allow-actions'],
    logLevel: oneOf('log-level', values['log-level'], LOG_LEVELS),
  };
}

/** Every Node, list+watch, restarted with backoff after a failure. */
function watchNodes(kube: KubeClient, clock: Clock, logger: Logger): NodeSource & { start(): Promise<void>; stop(): Promise<void> } {
  const informer = new ListWatchInformer<V1Node>({ path: '/api/v1/nodes', list: () => kube.get<V1NodeList>('/api/v1/nodes'), watch: kube.transport, watchQuery: { allowWatchBookmarks: true }, clock });
  // Jittered as client-go's reflector (1.0): a restart after an API server outage lands anywhere in [d, 2d).
  const restarts = new InformerRestarts({ start: () => informer.start(), what: 'Nodes', backoff: { initialMs: 1000, maxMs: 60_000, jitter: 1 }, clock, logger });
  informer.on('error', (err) => { restarts.failed(err); });
  return {
    list: () => informer.list(),
    onChange: (listener) => { informer.on('change', () => { listener(); }); },
    start: () => restarts.start(),
    stop: async () => {
      restarts.stop();
      await informer.stop();
    },
  };
}

/** Runs the command with the arguments after `redis-users`. */
export async function runRedisUsersCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const parsed = settingsOrExitCode(() => parseRedisUsersSettings(argv, env), REDIS_USERS_USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { settings } = parsed;
  const logger = pino({ level: settings.logLevel });
  const kube = connectCommandKube(settings.kubeconfig, logger);
  if (kube === undefined) return 1;
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 3, connectionName: 'nodelet-redis-users' });
  redis.on('error', (err: unknown) => { logger.debug({ err }, 'redis connection error'); });
  const nodes = watchNodes(kube, systemClock, logger);
  const dashboard = settings.dashboardPassword === undefined ? undefined : { passwordHash: passwordSha256(settings.dashboardPassword), allowActions: settings.dashboardAllowActions };
  const controller = new QueueUsersController({ nodes, redis, dashboard, clock: systemClock, logger });
  await nodes.start();
  controller.start();
  logger.info({ dashboardUser: dashboard !== undefined }, 'keeping the Redis users of the nodes');
  await waitForShutdownSignal(logger);
  await controller.stop();
  await nodes.stop();
  redis.disconnect();
  kube.close();
  return 0;
}
