/**
 * Killing the agent at one exact step of its work, then bringing the harness's agent back:
 *
 *   stop the harness agent (SIGTERM) ──► start an agent of our own behind the CRI interposer
 *     ──► prepare (e.g. a pod Running under it) ──► arm the trigger: SIGKILL our agent
 *     ──► act (create or delete the pod) ──► the trigger fires at the step; our agent is dead
 *     ──► record the pod's runtime objects as the kill left them
 *   restoreHarnessAgent(): `up.sh` starts the harness agent again (the one `npm test` runs)
 *
 * Our own agent never outlives the step: it is SIGKILLed on every path out of `killAgentAtStep`,
 * and `killLeftoverAgent()` (for `after` hooks) kills one a failed test may have left.
 */
import { eventually } from '../e2e/helpers.js';
import type { CriInterposer, Firing, Trigger } from './cri-interposer.js';
import { clusterUp, daemonPid, processAgeMs, stopHarnessAgent, type ClusterUpOptions } from './harness.js';
import { InterposedAgent } from './interposed-agent.js';
import { runtimeOfUid, type RuntimeView } from './state.js';

/** What the kill left. */
export interface StepKill {
  readonly firing: Firing;
  /** When our agent was dead (`Date.now()`). */
  readonly killedAtMs: number;
  /** Every sandbox and container of the pod right after the kill, in every state. */
  readonly atKill: RuntimeView;
  /** The pid of the agent that was killed. */
  readonly killedPid: number;
}

export interface StepKillPlan {
  readonly interposer: CriInterposer;
  /** Which call, and when; firing it SIGKILLs our agent. */
  readonly trigger: Omit<Trigger, 'fire'>;
  /** Runs with our agent up before the trigger is armed; returns the pod's UID when it knows it. */
  readonly prepare?: () => Promise<string | undefined>;
  /** What makes the agent reach the step (create or delete the pod); returns the pod's UID. */
  readonly act: (uidFromPrepare: string | undefined) => Promise<string>;
  /** How long the trigger may take to fire after `act`. */
  readonly timeoutMs: number;
}

let running: InterposedAgent | undefined;

/** Kills an agent of ours that a failed step left running (for `after` hooks). */
export async function killLeftoverAgent(): Promise<void> {
  const agent = running;
  running = undefined;
  if (agent !== undefined) await agent.kill('SIGKILL');
}

async function waitForKill(agent: InterposedAgent, plan: StepKillPlan): Promise<Firing> {
  const exit = await eventually('the trigger to fire and kill the agent', () => Promise.resolve(agent.exitStatus), plan.timeoutMs);
  const firing = plan.interposer.fired();
  if (firing === undefined) {
    throw new Error(`the agent exited (code ${exit.code}, signal ${exit.signal}) before the trigger fired; see ${agent.logPath}; last calls: ${plan.interposer.calls.slice(-10).join(', ')}`);
  }
  if (exit.signal !== 'SIGKILL') throw new Error(`the trigger fired but the agent exited with code ${exit.code}, signal ${exit.signal}`);
  return firing;
}

/** Runs the plan (see the file header); resolves once our agent has been killed at the step. */
export async function killAgentAtStep(plan: StepKillPlan): Promise<StepKill> {
  await stopHarnessAgent();
  const agent = await InterposedAgent.start(plan.interposer.endpoint);
  running = agent;
  try {
    const known = plan.prepare === undefined ? undefined : await plan.prepare();
    plan.interposer.arm({
      ...plan.trigger,
      fire: async () => {
        await agent.kill('SIGKILL');
      },
    });
    const uid = await plan.act(known);
    const firing = await waitForKill(agent, plan);
    const killedAtMs = agent.exitStatus?.atMs ?? Date.now();
    return { firing, killedAtMs, atKill: await runtimeOfUid(uid), killedPid: agent.pid };
  } finally {
    plan.interposer.disarm();
    await killLeftoverAgent();
  }
}

/** How the harness's agent came back. */
export interface Restored {
  /** How long `up.sh` took (it starts the agent from its build, waits for the node to be Ready). */
  readonly upMs: number;
  readonly agentPid: number;
  /** When the new agent process started (`Date.now()` scale, 10 ms resolution). */
  readonly agentStartedAtMs: number;
}

/** Starts the harness's agent again with `up.sh` (from the build in `dist/` with `prebuiltAgent`). */
export async function restoreHarnessAgent(options: ClusterUpOptions = {}): Promise<Restored> {
  const startedMs = Date.now();
  await clusterUp(options);
  const upMs = Date.now() - startedMs;
  const agentPid = await daemonPid('nodelet');
  if (agentPid === undefined) throw new Error('up.sh returned but the harness agent does not run');
  const agentStartedAtMs = Date.now() - (await processAgeMs(agentPid));
  return { upMs, agentPid, agentStartedAtMs };
}
