/**
 * `nodelet dashboard`: parses the dashboard's settings, serves until SIGTERM or SIGINT, then stops
 * cleanly. Returns the process exit code (2 for bad flags).
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { startDashboard } from './server.js';
import { settingsOrExitCode } from '../util/flags.js';
import { DASHBOARD_USAGE, parseDashboardSettings } from './settings.js';
import { waitForShutdownSignal } from '../util/shutdown-signal.js';

/** Runs the dashboard command with the arguments after `dashboard`. */
export async function runDashboardCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const parsed = settingsOrExitCode(() => parseDashboardSettings({ argv, env, readFile: (path) => readFileSync(path, 'utf8') }), DASHBOARD_USAGE);
  if ('exitCode' in parsed) return parsed.exitCode;
  const { settings } = parsed;
  const logger = pino({ level: settings.logLevel });
  if (settings.auth.kind === 'none') logger.warn('authentication is disabled (--no-auth): anyone who can reach the port can read the queues');
  const dashboard = await startDashboard({ settings, logger });
  await waitForShutdownSignal(logger);
  await dashboard.close();
  return 0;
}
