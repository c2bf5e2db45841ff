/** Shutdown on SIGTERM or SIGINT, shared by every long-running command. */
import type { Logger } from 'pino';

/** Resolves on the first SIGTERM or SIGINT, after logging it. */
export function waitForShutdownSignal(logger: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}
