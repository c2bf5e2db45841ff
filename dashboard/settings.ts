/**
 * Settings of `nodelet dashboard` from flags, then environment, then defaults. Authentication is
 * on unless `--no-auth` is given explicitly; a missing token is a start-up error, never an open
 * dashboard.
 */
import { parseArgs } from 'node:util';

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
  /** The reconcile queues' Redis key prefix (the agent's default is `nodelet`). */
  readonly prefix: string;
  readonly auth: DashboardAuth;
  /** Allow retries, cleans and other writes; read-only otherwise. */
  readonly allowActions: boolean;
  /** How often Redis is scanned for queues of new nodes. */
  readonly refreshIntervalMs: number;
  readonly logLevel: string;
}

/** A bad flag or a missing setting, reported with the usage text. */
export class DashboardFlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DashboardFlagError';
  }
}

/** True when `error` is a {@link DashboardFlagError}. */
export function isDashboardFlagError(error: unknown): error is DashboardFlagError {
  return error instanceof DashboardFlagError;
}

export const DASHBOARD_USAGE = `Usage: nodelet dashboard [flags]

Serves the reconcile queues of every node (bull-board) and a reconcile timeline per pod.

Flags (environment variable in brackets):
  --listen HOST:PORT        address to bind; default 127.0.0.1:3000
  --redis-url URL           Redis holding the queues [REDIS_URL]; default redis://127.0.0.1:6379
  --prefix PREFIX           the queues' Redis key prefix; default nodelet
  --token-file PATH         file holding the access token [or NODELET_DASHBOARD_TOKEN]
  --no-auth                 serve without authentication (only behind something that authenticates)
  --allow-actions           allow retries, cleans and other changes; read-only otherwise
  --refresh-interval SECS   how often to look for queues of new nodes; default 10
  --log-level LEVEL         trace|debug|info|warn|error [LOG_LEVEL]; default info
  -h, --help                this text

Send the token as "Authorization: Bearer <token>", or as the password of HTTP basic
authentication with any user name (a browser's login prompt).
`;

const OPTIONS = {
  listen: { type: 'string' },
  'redis-url': { type: 'string' },
  prefix: { type: 'string' },
  'token-file': { type: 'string' },
  'no-auth': { type: 'boolean' },
  'allow-actions': { type: 'boolean' },
  'refresh-interval': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/** What {@link parseDashboardSettings} reads. */
export interface DashboardSettingsInput {
  /** Arguments after `dashboard`. */
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Reads the token file (`fs.readFileSync(path, 'utf8')` in production). */
  readonly readFile: (path: string) => string;
}

/** Parses flags and environment into settings; throws {@link DashboardFlagError} on bad input. */
export function parseDashboardSettings(input: DashboardSettingsInput): DashboardSettings | 'help' {
  const values = parseFlags(input.argv);
  if (values.help === true) return 'help';
  const logLevel = values['log-level'] ?? nonEmpty(input.env.LOG_LEVEL) ?? 'info';
  if (!LEVELS.has(logLevel)) throw new DashboardFlagError(`--log-level must be one of ${[...LEVELS].join('|')}, got "${logLevel}"`);
  const prefix = values.prefix ?? 'nodelet';
  if (prefix === '' || prefix.includes(':')) throw new DashboardFlagError(`--prefix must be non-empty and without ":", got "${prefix}"`);
  return {
    listen: parseListen(values.listen ?? '127.0.0.1:3000'),
    redisUrl: values['redis-url'] ?? nonEmpty(input.env.REDIS_URL) ?? 'redis://127.0.0.1:6379',
    prefix,
    auth: resolveAuth({ noAuth: values['no-auth'] === true, tokenFile: values['token-file'], input }),
    allowActions: values['allow-actions'] === true,
    refreshIntervalMs: positiveSeconds('refresh-interval', values['refresh-interval'] ?? '10') * 1000,
    logLevel,
  };
}

function parseFlags(argv: readonly string[]): ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'] {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: false, strict: true }).values;
  } catch (error) {
    // node:util reports unknown flags and missing values with ERR_PARSE_ARGS_* codes.
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      throw new DashboardFlagError(error.message);
    }
    throw error;
  }
}

/** Parses `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (all interfaces). */
export function parseListen(raw: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  if (match === null || port > 65535) throw new DashboardFlagError(`--listen must be HOST:PORT, got "${raw}"`);
  const host = match[1] ?? match[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port };
}

function resolveAuth(options: {
  readonly noAuth: boolean;
  readonly tokenFile: string | undefined;
  readonly input: DashboardSettingsInput;
}): DashboardAuth {
  const { noAuth, tokenFile, input } = options;
  const fromEnv = nonEmpty(input.env.NODELET_DASHBOARD_TOKEN);
  if (noAuth) {
    if (tokenFile !== undefined) throw new DashboardFlagError('--no-auth and --token-file contradict each other');
    return { kind: 'none' };
  }
  if (tokenFile !== undefined) return { kind: 'token', token: readToken(tokenFile, input.readFile) };
  if (fromEnv !== undefined) return { kind: 'token', token: fromEnv.trim() };
  throw new DashboardFlagError(
    'a token is required: set NODELET_DASHBOARD_TOKEN or --token-file (or pass --no-auth to serve without authentication)',
  );
}

function readToken(path: string, readFile: (path: string) => string): string {
  let content: string;
  try {
    content = readFile(path);
  } catch (error) {
    throw new DashboardFlagError(`--token-file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const token = content.trim();
  if (token === '') throw new DashboardFlagError(`--token-file ${path} is empty`);
  return token;
}

function positiveSeconds(name: string, raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new DashboardFlagError(`--${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
