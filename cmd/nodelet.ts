/**
 * The `nodelet` command: parses settings, starts the agent, and stops it cleanly on SIGTERM or
 * SIGINT (pods keep running; a restarted agent picks them up from the runtime).
 */
import { pino } from 'pino';
import { startAgent, type Agent } from './agent.js';
import { isUnsupportedCgroupDriverError } from './assembly/pod-cgroups.js';
import { SharedRootError } from '../reconcilers/volumes/shared-root.js';
import { agentVersion } from '../controllers/node/agent-version.js';
import { settingsOrExitCode } from '../util/flags.js';
import { USAGE, parseSettings } from './flags.js';
import { waitForShutdownSignal } from '../util/shutdown-signal.js';

async function main(argv: readonly string[]): Promise<number> {
  // As `kubelet --version`: what runs, for support and for the image's checks.
  if (argv[0] === '--version' || argv[0] === 'version') {
    process.stdout.write(`nodelet ${agentVersion()} (Node.js ${process.version})\n`);
    return 0;
  }
  const [command, ...rest] = argv[0] === undefined || argv[0].startsWith('-') ? ['agent', ...argv] : argv;
  if (command === 'dashboard') {
    // Loaded on demand: the agent never loads the dashboard's web stack.
    const { runDashboardCommand } = await import('../dashboard/main.js');
    return runDashboardCommand(rest, process.env);
  }
  if (command === 'approver') {
    // The cluster's CSR approver for nodelet's nodes (a Deployment of the chart), not the agent.
    const { runApproverCommand } = await import('../approver/main.js');
    return runApproverCommand(rest, process.env);
  }
  if (command === 'redis-users') {
    // The Redis users of the nodes' queues, next to the chart's Redis; not the agent.
    const { runRedisUsersCommand } = await import('../queue-users/main.js');
    return runRedisUsersCommand(rest, process.env);
  }
  if (command !== 'agent') {
    process.stderr.write(`unknown command "${command ?? ''}" (commands: agent, dashboard, approver, redis-users, version)\n\n${USAGE}`);
    return 2;
  }
  const parsed = settingsOrExitCode(() => parseSettings(rest, process.env), USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { settings } = parsed;
  const logger = pino({ level: settings.logLevel, base: { node: settings.nodeName } });
  let agent: Agent;
  try {
    agent = await startAgent(settings, logger);
  } catch (error) {
    // A host nodelet cannot serve as configured: said once, plainly, not as a crash's stack.
    if (isUnsupportedCgroupDriverError(error)) {
      logger.fatal({ cgroupDriver: error.driver }, error.message);
      return 1;
    }
    if (error instanceof SharedRootError) {
      logger.fatal({ rootDir: error.dir }, error.message);
      return 1;
    }
    throw error;
  }
  await waitForShutdownSignal(logger);
  await agent.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`nodelet: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
