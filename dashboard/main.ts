/**
 * `nodelet dashboard`: parses the dashboard's settings, serves until SIGTERM or SIGINT, then stops
 * cleanly. Returns the process exit code (2 for bad flags).
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { startDashboard } from './server.js';
import { isFlagError } from '../util/flags.js';
import { DASHBOARD_USAGE, parseDashboardSettings } from './settings.js';
import { waitForShutdownSignal } from '../util/shutdown-signal.js';

/** Runs the dashboard command with the arguments after `dashboard`. */
export async function runDashboardCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let settings;
  try {
    settings = parseDashboardSettings({ argv, env, readFile: (path) => readFileSync(path, 'utf8') });
  } catch (error) {
    if (!isFlagError(error)) throw error;
    process.stderr.write(`${error.message}\n\n${DASHBOARD_USAGE}`);
    return 2;
  }
  if (settings === 'help') {
    process.stdout.write(DASHBOARD_USAGE);
    return 0;
  }
  const logger = pino({ level: settings.logLevel });
  if (settings.auth.kind === 'none') logger.warn('authentication is disabled (--no-auth): anyone who can reach the port can read the queues');
  const dashboard = await startDashboard({ settings, logger });
  await waitForShutdownSignal(logger);
  await dashboard.close();
  return 0;
}
