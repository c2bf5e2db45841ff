/**
 * Starts the agent the `nodelet` command runs: everything is built by the one assembly function
 * (`assemble-agent.ts`); this file only starts and stops it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { assembleAgent } from './assemble-agent.js';
import type { AgentSettings } from './flags.js';

/** A running agent. */
export interface Agent {
  /** Stops watching and reconciling; running pods keep running. */
  stop(): Promise<void>;
}

/** Starts the agent. Resolves once every part runs. */
export async function startAgent(settings: AgentSettings, logger: Logger, clock: Clock = systemClock): Promise<Agent> {
  const agent = await assembleAgent(settings, logger, { clock });
  await agent.start();
  return { stop: () => agent.stop() };
}
