/**
 * Starts the agent the `nodelet` command runs: everything is built by the one assembly function
 * (`assemble-agent.ts`); this file only starts and stops it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { makeRootShared } from '../reconcilers/volumes/shared-root.js';
import { readMounts, runMount } from '../reconcilers/volumes/mounts-table.js';
import { assembleAgent } from './assemble-agent.js';
import type { AgentSettings } from './flags.js';

/** A running agent. */
export interface Agent {
  /** Stops watching and reconciling; running pods keep running. */
  stop(): Promise<void>;
}

/**
 * The root directory, made as the kubelet's setupDataDirs makes it before anything uses it: it
 * exists and lies on a shared mount (Bidirectional volume mounts need one).
 * @throws SharedRootError when it cannot be made shared.
 */
async function prepareRootDir(rootDir: string, logger: Logger): Promise<void> {
  const dir = path.resolve(rootDir);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  if ((await makeRootShared(dir, { readMounts, mount: runMount })) === 'bind-mounted') {
    logger.info({ rootDir: dir }, 'bind-mounted the root directory onto itself with shared propagation');
  }
}

/** Starts the agent. Resolves once every part runs. */
export async function startAgent(settings: AgentSettings, logger: Logger, clock: Clock = systemClock): Promise<Agent> {
  await prepareRootDir(settings.rootDir, logger);
  const agent = await assembleAgent(settings, logger, { clock });
  await agent.start();
  return { stop: () => agent.stop() };
}
