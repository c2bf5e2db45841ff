/**
 * Settings of `nodelet dashboard` from flags, then environment, then defaults. Authentication is
 * on unless `--no-auth` is given explicitly; a missing token is a start-up error, never an open
 * dashboard.
 */
import type { SentinelSettings } from '../controllers/queue/redis.js';
import { parseRedisTopology, type ClusterSettings } from '../controllers/queue/redis-cluster.js';
import { FlagError, formatUsage, isFlagError, LOG_LEVELS, oneOf, parseFlags, positiveInteger, type FlagSpecs } from '../util/flags.js';

/** Where the dashboard listens. */
export interface ListenAddress {
  /** An IP address or host name; IPv6 without brackets. */
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
}

/** How requests are authenticated. */
export type DashboardAuth =
  /** Every request but `/healthz` needs the token (bearer, or basic auth with any user). */
  | { readonly kind: 'token'; readonly token: string }
  /** Nothing is checked: only with `--no-auth`. */
  | { readonly kind: 'none' };

/** Everything the dashboard server needs. */
export interface DashboardSettings {
  readonly listen: ListenAddress;
  readonly redisUrl: string;
  /** Reach Redis through these sentinels; undefined: the URL's Redis. */
  readonly redisSentinel: SentinelSettings | undefined;
  /** Redis is a cluster found through these nodes: every primary is scanned for queues. */
  readonly redisCluster: ClusterSettings | undefined;
  /** The reconcile queues' Redis key prefix (the agent's default is `nodelet`). */
  readonly prefix: string;
  readonly auth: DashboardAuth;
  /** Allow retries, cleans and other writes; read-only otherwise. */
  readonly allowActions: boolean;
  /** How often Redis is scanned for queues of new nodes. */
  readonly refreshIntervalMs: number;
  readonly logLevel: string;
}

/** A bad flag or a missing setting is a {@link FlagError}; this name is kept for the dashboard's callers. */
export const isDashboardFlagError = isFlagError;

/** The dashboard's flags: one declaration for parsing and for the usage text. */
const FLAGS = {
  listen: { type: 'string', value: 'HOST:PORT', default: '127.0.0.1:3000', description: 'address to bind' },
  'redis-url': { type: 'string', value: 'URL', env: 'REDIS_URL', default: 'redis://127.0.0.1:6379', description: 'Redis holding the queues' },
  'redis-sentinels': { type: 'string', value: 'HOST:PORT,...', env: 'REDIS_SENTINELS', default: '', description: 'Redis Sentinels naming the master (then --redis-url gives only password and db)' },
  'redis-sentinel-master': { type: 'string', value: 'NAME', env: 'REDIS_SENTINEL_MASTER', default: 'mymaster', description: 'the master name the sentinels know' },
  'redis-cluster-nodes': { type: 'string', value: 'HOST:PORT,...', env: 'REDIS_CLUSTER_NODES', default: '', description: 'some nodes of a Redis Cluster holding the queues (then --redis-url gives only user, password and rediss://)' },
  prefix: { type: 'string', value: 'PREFIX', default: 'nodelet', description: "the queues' Redis key prefix" },
  'token-file': { type: 'string', value: 'PATH', description: 'file holding the access token (or the token itself in NODELET_DASHBOARD_TOKEN)' },
  'no-auth': { type: 'boolean', description: 'serve without authentication (only behind something that authenticates)' },
  'allow-actions': { type: 'boolean', description: 'allow retries, cleans and other changes; read-only otherwise' },
  'refresh-interval': { type: 'string', value: 'SECS', default: '10', description: 'how often to look for queues of new nodes' },
  'log-level': { type: 'string', value: 'LEVEL', env: 'LOG_LEVEL', default: 'info', description: 'trace|debug|info|warn|error' },
} as const satisfies FlagSpecs;

export const DASHBOARD_USAGE = formatUsage(FLAGS, {
  synopsis: 'nodelet dashboard [flags]',
  summary: 'Serves the reconcile queues of every node (bull-board) and a reconcile timeline per pod.',
  notes: `Send the token as "Authorization: Bearer <token>", or as the password of HTTP basic
authentication with any user name (a browser's login prompt).
`,
});

/** What {@link parseDashboardSettings} reads. */
export interface DashboardSettingsInput {
  /** Arguments after `dashboard`. */
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Reads the token file (`fs.readFileSync(path, 'utf8')` in production). */
  readonly readFile: (path: string) => string;
}

/** Parses flags and environment into settings; throws {@link FlagError} on bad input. */
export function parseDashboardSettings(input: DashboardSettingsInput): DashboardSettings | 'help' {
  const values = parseFlags(FLAGS, { argv: input.argv, env: input.env });
  if (values === 'help') return 'help';
  const prefix = values.prefix;
  if (prefix === '' || prefix.includes(':')) throw new FlagError(`--prefix must be non-empty and without ":", got "${prefix}"`);
  return {
    listen: parseListen(values.listen),
    redisUrl: values['redis-url'],
    ...dashboardTopology({ sentinels: values['redis-sentinels'], masterName: values['redis-sentinel-master'], clusterNodes: values['redis-cluster-nodes'] }),
    prefix,
    auth: resolveAuth({ noAuth: values['no-auth'], tokenFile: values['token-file'], input }),
    allowActions: values['allow-actions'],
    refreshIntervalMs: positiveInteger('refresh-interval', values['refresh-interval']) * 1000,
    logLevel: oneOf('log-level', values['log-level'], LOG_LEVELS),
  };
}

function dashboardTopology(flags: Parameters<typeof parseRedisTopology>[0]): Pick<DashboardSettings, 'redisSentinel' | 'redisCluster'> {
  try {
    const topology = parseRedisTopology(flags);
    return { redisSentinel: topology.sentinel, redisCluster: topology.cluster };
  } catch (error) {
    if (error instanceof RangeError) throw new FlagError(error.message);
    throw error;
  }
}

/** Parses `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (all interfaces). */
export function parseListen(raw: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  if (match === null || port > 65535) throw new FlagError(`--listen must be HOST:PORT, got "${raw}"`);
  const host = match[1] ?? match[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port };
}

function resolveAuth(options: {
  readonly noAuth: boolean;
  readonly tokenFile: string | undefined;
  readonly input: DashboardSettingsInput;
}): DashboardAuth {
  const { noAuth, tokenFile, input } = options;
  const fromEnv = input.env.NODELET_DASHBOARD_TOKEN?.trim() ?? '';
  if (noAuth) {
    if (tokenFile !== undefined) throw new FlagError('--no-auth and --token-file contradict each other');
    return { kind: 'none' };
  }
  if (tokenFile !== undefined) return { kind: 'token', token: readToken(tokenFile, input.readFile) };
  if (fromEnv !== '') return { kind: 'token', token: fromEnv };
  throw new FlagError(
    'a token is required: set NODELET_DASHBOARD_TOKEN or --token-file (or pass --no-auth to serve without authentication)',
  );
}

function readToken(path: string, readFile: (path: string) => string): string {
  let content: string;
  try {
    content = readFile(path);
  } catch (error) {
    throw new FlagError(`--token-file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const token = content.trim();
  if (token === '') throw new FlagError(`--token-file ${path} is empty`);
  return token;
}
