/**
 * The rounds of the side-by-side benchmark: in each round, for each N, the batch on every path in
 * the round's order (rotated each round); then status freshness and the steady load on each agent.
 * Before each measurement every agent node must be idle (no unfinished pod bound to it): the paths
 * share two cores, so a leftover would be measured as the other's cost.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { ImageService, RuntimeService } from '../cri/types.js';
import { activePodsOn, type AgentNode } from './agent-node.js';
import { benchAgentBatch, pause, waitUntil } from './agent-startup.js';
import { roundOrder, type Sample, type Target } from './compare.js';
import { benchRawCri } from './raw-cri-startup.js';
import { batchSamples, freshnessSamples, rawSamples, steadySamples } from './samples.js';
import { benchStatusFreshness } from './status-freshness.js';
import { benchSteady } from './steady.js';

export interface RunSettings {
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly steadyMs: number;
  readonly steadyLifeMs: number;
  readonly idleMs: number;
  readonly idlePods: number;
  readonly freshPods: number;
  readonly rawConcurrency: number;
  readonly timeoutMs: number;
}

export interface RunContext {
  readonly kubeConfig: KubeConfig;
  /** nodelet's node first, then the kubelet's when the run has one. */
  readonly nodes: readonly AgentNode[];
  /** The runtime raw CRI drives (nodelet's node's containerd, under a node label the agent ignores). */
  readonly raw: { readonly runtime: RuntimeService; readonly images: ImageService };
  readonly settings: RunSettings;
  readonly log: (line: string) => void;
}

/** Pause between two measurements, so one's tail (its runtime's cleanup) is not the next one's load. */
const BETWEEN_MS = 3000;
const IDLE_SETTLE_MS = 10_000;
/** How long a measurement waits for the benchmark's pods of the one before to be gone. */
const IDLE_WAIT_MS = 60_000;

/**
 * Waits until no agent node runs a pod of the benchmark; returns a note when one still does, or
 * when pods of others run on a node (they share the CPU; the benchmark does not remove them).
 */
async function ensureIdle(context: RunContext): Promise<string | undefined> {
  const counts = async (): Promise<{ name: string; bench: number; other: number }[]> =>
    Promise.all(context.nodes.map(async (n) => ({ name: n.nodeName, ...(await activePodsOn(context.kubeConfig, n.nodeName)) })));
  await waitUntil('idle agent nodes', async () => (await counts()).every((c) => c.bench === 0), IDLE_WAIT_MS).catch(() => undefined);
  const busy = (await counts()).filter((c) => c.bench + c.other > 0);
  return busy.length === 0 ? undefined : `measured while other pods ran: ${busy.map((c) => `${c.bench + c.other} on ${c.name}`).join(', ')}`;
}

async function measureBatch(context: RunContext, target: Target, size: number, round: number): Promise<Sample[]> {
  const { settings, log } = context;
  if (target === 'raw CRI') {
    return rawSamples(round, await benchRawCri({ runtime: context.raw.runtime, images: context.raw.images, count: size, concurrency: settings.rawConcurrency, log }));
  }
  const node = context.nodes.find((n) => n.target === target);
  if (node === undefined) return [];
  const idle = size === settings.idlePods ? { settleMs: IDLE_SETTLE_MS, windowMs: settings.idleMs } : undefined;
  return batchSamples(target, round, await benchAgentBatch({ kubeConfig: context.kubeConfig, node, count: size, timeoutMs: settings.timeoutMs, idle, log }));
}

async function measureAgentLoads(context: RunContext, node: AgentNode, round: number): Promise<Sample[]> {
  const { kubeConfig, settings, log } = context;
  const fresh = await benchStatusFreshness({ kubeConfig, node, pods: settings.freshPods, timeoutMs: settings.timeoutMs, log });
  await pause(BETWEEN_MS);
  const steady = await benchSteady({ kubeConfig, node, durationMs: settings.steadyMs, lifeMs: settings.steadyLifeMs, timeoutMs: settings.timeoutMs, log });
  return [...freshnessSamples(node.target, round, fresh), ...steadySamples(node.target, round, steady)];
}

/** Runs every round; returns the samples and what a reader should know about the run. */
export async function runRounds(context: RunContext): Promise<{ samples: Sample[]; notes: string[] }> {
  const { settings, log } = context;
  const targets: Target[] = [...context.nodes.map((n) => n.target), 'raw CRI'];
  const samples: Sample[] = [];
  const notes: string[] = [];
  const step = async (what: string, measure: () => Promise<Sample[]>): Promise<void> => {
    const note = await ensureIdle(context);
    if (note !== undefined) notes.push(`${what}: ${note}`);
    samples.push(...(await measure()));
    await pause(BETWEEN_MS);
  };
  for (let round = 1; round <= settings.rounds; round++) {
    log(`round ${round} of ${settings.rounds}`);
    for (const size of settings.sizes) {
      for (const target of roundOrder(targets, round - 1)) {
        await step(`round ${round}, ${target}, N=${size}`, () => measureBatch(context, target, size, round));
      }
    }
    for (const node of roundOrder(context.nodes, round - 1)) {
      await step(`round ${round}, ${node.target}, freshness and steady load`, () => measureAgentLoads(context, node, round));
    }
  }
  return { samples, notes };
}
