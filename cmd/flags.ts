/**
 * The agent's settings from flags, then environment, then defaults. Invalid values are reported as
 * a `FlagError` naming the flag, before anything starts.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import type { V1Taint } from '@kubernetes/client-node';
import { isRegistrationFlagError, parseNodeLabels, parseTaints } from './registration-flags.js';

export interface AgentSettings {
  /** Path of a kubeconfig; in-cluster configuration when absent. */
  readonly kubeconfig: string | undefined;
  readonly nodeName: string;
  /** The node's InternalIP; the first non-internal IPv4 address of the host when absent. */
  readonly nodeIp: string;
  readonly criEndpoint: string;
  readonly redisUrl: string;
  readonly rootDir: string;
  readonly podLogDir: string;
  readonly logLevel: string;
  readonly concurrency: number;
  readonly maxPods: number;
  /** Period of the full resync that re-enqueues every pod (jittered by up to 10%). */
  readonly resyncPeriodMs: number;
  /** Labels the Node is registered with and keeps (`--node-labels`). */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** Taints the Node is created with (`--register-with-taints`); a node cannot change them later. */
  readonly registerWithTaints: readonly V1Taint[];
}

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

export const USAGE = `Usage: nodelet [agent] [flags]

Runs the node agent: registers the Node, runs the pods bound to it through the CRI runtime.

Flags (environment variable in brackets):
  --kubeconfig PATH        kubeconfig to reach the API server [KUBECONFIG]; in-cluster config when unset
  --node-name NAME         name of the Node to register [NODE_NAME]; default: the host name
  --node-ip IP             the node's InternalIP [NODE_IP]; default: the host's first IPv4 address
  --cri-endpoint URL       CRI runtime socket, unix:///path [CONTAINER_RUNTIME_ENDPOINT]
  --redis-url URL          Redis for the work queue [REDIS_URL]; default redis://127.0.0.1:6379
  --root-dir DIR           pod data root [NODELET_ROOT_DIR]; default /var/lib/nodelet
  --pod-log-dir DIR        container logs root; default /var/log/pods
  --log-level LEVEL        trace|debug|info|warn|error [LOG_LEVEL]; default info
  --concurrency N          pods reconciled at once [NODELET_CONCURRENCY]; default 4
  --max-pods N             pods the node advertises; default 110
  --resync-period SECONDS  full resync period; default 60
  --node-labels K=V,...    labels the Node is registered with and keeps
  --register-with-taints K=V:EFFECT,...
                           taints the Node is created with (e.g. nodelet.dev/agent=true:NoSchedule)
  -h, --help               this text
`;

function positiveInt(name: string, raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new FlagError(`--${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/** The host's first non-internal IPv4 address. */
function defaultNodeIp(): string {
  for (const addresses of Object.values(os.networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found !== undefined) return found.address;
  }
  return '127.0.0.1';
}

/** Runs a registration-flag parser, reporting its failures as a {@link FlagError}. */
function registration<T>(parse: (raw: string) => T, raw: string): T {
  try {
    return parse(raw);
  } catch (error) {
    if (isRegistrationFlagError(error)) throw new FlagError(error.message);
    throw error;
  }
}

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

const OPTIONS = {
  kubeconfig: { type: 'string' },
  'node-name': { type: 'string' },
  'node-ip': { type: 'string' },
  'cri-endpoint': { type: 'string' },
  'redis-url': { type: 'string' },
  'root-dir': { type: 'string' },
  'pod-log-dir': { type: 'string' },
  'log-level': { type: 'string' },
  concurrency: { type: 'string' },
  'max-pods': { type: 'string' },
  'resync-period': { type: 'string' },
  'node-labels': { type: 'string' },
  'register-with-taints': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type FlagName = Exclude<keyof typeof OPTIONS, 'help'>;

/** Parses argv (without node and script) and the environment into settings. */
export function parseSettings(argv: readonly string[], env: NodeJS.ProcessEnv): AgentSettings | 'help' {
  const { values } = parseArgs({ args: [...argv], allowPositionals: true, options: OPTIONS });
  if (values.help === true) return 'help';
  /** The flag's value, else the first set environment variable, else the default. */
  const pick = (flag: FlagName, envName: string | undefined, fallback: string): string => {
    const fromEnv = envName === undefined ? undefined : env[envName];
    return values[flag] ?? (fromEnv === undefined || fromEnv === '' ? fallback : fromEnv);
  };
  const criEndpoint = pick('cri-endpoint', 'CONTAINER_RUNTIME_ENDPOINT', '');
  if (criEndpoint === '') throw new FlagError('--cri-endpoint (or CONTAINER_RUNTIME_ENDPOINT) is required');
  const logLevel = pick('log-level', 'LOG_LEVEL', 'info');
  if (!LEVELS.has(logLevel)) throw new FlagError(`--log-level must be one of ${[...LEVELS].join('|')}, got "${logLevel}"`);
  const kubeconfig = pick('kubeconfig', 'KUBECONFIG', '');
  return {
    kubeconfig: kubeconfig === '' ? undefined : kubeconfig,
    nodeName: pick('node-name', 'NODE_NAME', os.hostname()).toLowerCase(),
    nodeIp: pick('node-ip', 'NODE_IP', '') || defaultNodeIp(),
    criEndpoint,
    redisUrl: pick('redis-url', 'REDIS_URL', 'redis://127.0.0.1:6379'),
    rootDir: pick('root-dir', 'NODELET_ROOT_DIR', '/var/lib/nodelet'),
    podLogDir: pick('pod-log-dir', undefined, '/var/log/pods'),
    logLevel,
    concurrency: positiveInt('concurrency', pick('concurrency', 'NODELET_CONCURRENCY', '4')),
    maxPods: positiveInt('max-pods', pick('max-pods', undefined, '110')),
    resyncPeriodMs: positiveInt('resync-period', pick('resync-period', undefined, '60')) * 1000,
    nodeLabels: registration(parseNodeLabels, pick('node-labels', undefined, '')),
    registerWithTaints: registration(parseTaints, pick('register-with-taints', undefined, '')),
  };
}
