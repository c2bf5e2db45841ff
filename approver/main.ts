/**
 * `nodelet approver`: the nodelet CSR approver (approver.ts), run until SIGTERM or SIGINT. It runs
 * in the cluster (a Deployment of the chart) with a service account allowed to read and approve
 * CertificateSigningRequests and to read Nodes, or anywhere with `--kubeconfig`. Returns the
 * process exit code (2 for bad flags, 1 when there is no API server to talk to).
 */
import { pino } from 'pino';
import { connectCommandKube } from '../kube/client.js';
import { FlagError, formatUsage, LOG_LEVELS, oneOf, parseFlags, settingsOrExitCode, type FlagSpecs } from '../util/flags.js';
import { waitForShutdownSignal } from '../util/shutdown-signal.js';
import { CsrApprover } from './approver.js';
import type { ApproverPolicy } from './decide.js';

/** The approver's flags: one declaration for parsing and for the usage text. */
const FLAGS = {
  kubeconfig: { type: 'string', value: 'PATH', env: 'KUBECONFIG', defaultText: 'in-cluster config', description: 'kubeconfig to reach the API server' },
  'agent-service-account': {
    type: 'string',
    value: 'NAMESPACE:NAME',
    repeatable: true,
    description: "the nodelet agents' service account (repeatable, or comma-separated); at least one",
  },
  'node-name-suffix': { type: 'string', value: 'SUFFIX', default: '', description: 'an agent on host H registers Node H+SUFFIX (the chart\'s node.nameSuffix)' },
  'log-level': { type: 'string', value: 'LEVEL', env: 'LOG_LEVEL', default: 'info', description: 'trace|debug|info|warn|error' },
} as const satisfies FlagSpecs;

/** The usage text of `nodelet approver`. */
export const APPROVER_USAGE = formatUsage(FLAGS, {
  synopsis: 'nodelet approver [flags]',
  summary: `Approves the certificate requests of nodelet agents: a client certificate only for the Node
named after the host the agent's pod token is bound to (or a node renewing its own), a nodelet
node's serving certificate only for the addresses its Node reports. Denies such requests for any
other name; leaves everyone else's requests alone.`,
  notes: `A suffix starting with a dash is given with "=": --node-name-suffix=-nodelet.
`,
});

/** What the approver runs with. */
export interface ApproverSettings {
  /** undefined: in-cluster configuration. */
  readonly kubeconfig: string | undefined;
  readonly policy: ApproverPolicy;
  readonly logLevel: string;
}

/** A Kubernetes namespace: a DNS-1123 label. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A service account name: a DNS-1123 subdomain. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `<namespace>:<name>` as the username of that service account. @throws FlagError otherwise. */
export function serviceAccountUsername(raw: string): string {
  const [namespace = '', name = '', ...rest] = raw.trim().split(':');
  if (rest.length > 0 || namespace.length > 63 || !NAMESPACE.test(namespace) || name.length > 253 || !SUBDOMAIN.test(name)) {
    throw new FlagError(`--agent-service-account must be NAMESPACE:NAME (e.g. nodelet:nodelet), got "${raw}"`);
  }
  return `system:serviceaccount:${namespace}:${name}`;
}

function agentServiceAccounts(raw: string | undefined): string[] {
  const entries = (raw ?? '').split(',').filter((entry) => entry.trim() !== '');
  if (entries.length === 0) throw new FlagError('--agent-service-account is required: the service account the nodelet agents run as');
  return [...new Set(entries.map(serviceAccountUsername))];
}

function nodeNameSuffix(raw: string): string {
  // Part of a Node's name: what a DNS-1123 subdomain may hold.
  if (!/^[a-z0-9.-]*$/.test(raw) || raw.length > 63) throw new FlagError(`--node-name-suffix may hold only a-z, 0-9, "-" and ".", got "${raw}"`);
  return raw;
}

/** Parses flags and environment into settings; throws {@link FlagError} on bad input. */
export function parseApproverSettings(argv: readonly string[], env: NodeJS.ProcessEnv): ApproverSettings | 'help' {
  const values = parseFlags(FLAGS, { argv, env });
  if (values === 'help') return 'help';
  const kubeconfig = values.kubeconfig ?? '';
  return {
    kubeconfig: kubeconfig === '' ? undefined : kubeconfig,
    policy: { agentServiceAccounts: agentServiceAccounts(values['agent-service-account']), nodeNameSuffix: nodeNameSuffix(values['node-name-suffix']) },
    logLevel: oneOf('log-level', values['log-level'], LOG_LEVELS),
  };
}

/** Runs the approver command with the arguments after `approver`. */
export async function runApproverCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const parsed = settingsOrExitCode(() => parseApproverSettings(argv, env), APPROVER_USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { settings } = parsed;
  const logger = pino({ level: settings.logLevel });
  const kube = connectCommandKube(settings.kubeconfig, logger);
  if (kube === undefined) return 1;
  const approver = new CsrApprover({ kube, policy: settings.policy, logger });
  logger.info({ agentServiceAccounts: settings.policy.agentServiceAccounts, nodeNameSuffix: settings.policy.nodeNameSuffix }, 'CSR approver starting');
  await approver.start();
  await waitForShutdownSignal(logger);
  await approver.stop();
  kube.close();
  return 0;
}
